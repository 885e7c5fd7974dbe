package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hone-rl/hone/format/peft"
	"github.com/hone-rl/hone/kernels"
)

// Module names one of the seven projections LoRA can target, by its
// checkpoint name (PEFT target_modules use the same names).
type Module int

const (
	ModQ Module = iota
	ModK
	ModV
	ModO
	ModGate
	ModUp
	ModDown
	numModules
)

var moduleNames = [numModules]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// String returns the checkpoint name ("q_proj", …).
func (m Module) String() string {
	if m < 0 || m >= numModules {
		return fmt.Sprintf("Module(%d)", int(m))
	}
	return moduleNames[m]
}

// Path returns the module's place inside a layer: "self_attn.q_proj", "mlp.up_proj".
func (m Module) Path() string {
	if m <= ModO {
		return "self_attn." + m.String()
	}
	return "mlp." + m.String()
}

// ParseModule maps "q_proj" (or "q") to its Module.
func ParseModule(s string) (Module, error) {
	for i, n := range moduleNames {
		if s == n || s+"_proj" == n {
			return Module(i), nil
		}
	}
	return 0, fmt.Errorf("lora: unknown target module %q (want one of q_proj k_proj v_proj o_proj gate_proj up_proj down_proj)", s)
}

// AllModules lists the seven projections in checkpoint order.
func AllModules() []Module {
	return []Module{ModQ, ModK, ModV, ModO, ModGate, ModUp, ModDown}
}

// LoRA is one low-rank update of a projection weight W [Out, In]:
// W' = W + Scale·B·A.
type LoRA struct {
	A  []float32 // [R, In]
	B  []float32 // [Out, R]
	DA []float32 // [R, In]  gradient, accumulated by Backward
	DB []float32 // [Out, R] gradient, accumulated by Backward

	R, In, Out int
	Scale      float32 // alpha/R, or alpha/√R with rsLoRA
}

// AdapterConfig says which projections get a LoRA update and how it is scaled.
type AdapterConfig struct {
	Rank    int
	Alpha   float64
	RSLoRA  bool     // scale alpha/√r instead of alpha/r
	Targets []Module // projections adapted in every layer
}

// Scale is the factor applied to B·A.
func (ac AdapterConfig) Scale() float32 {
	if ac.RSLoRA {
		return float32(ac.Alpha / math.Sqrt(float64(ac.Rank)))
	}
	return float32(ac.Alpha / float64(ac.Rank))
}

// Adapter is a set of LoRA updates over a model: Layers[l][m] is nil where
// projection m of layer l is not adapted. One adapter serves one batch.
type Adapter struct {
	Config AdapterConfig
	Layers [][numModules]*LoRA
	// LayersPath is the model's Config.LayersPath: where the adapter's
	// tensors say the layers are ("": model.layers).
	LayersPath string

	be kernels.Backend // where A, B, DA and DB live (Place); nil: Go memory
	// params and grads, on a backend that allocates (kernels.Allocator):
	// one allocation each holding every A and B, every DA and DB, in
	// Params order (Flat), which A, B, DA and DB are views of.
	params, grads []float32
}

// dims returns (In, Out) of projection m.
func (c *Config) dims(m Module) (in, out int) {
	switch m {
	case ModQ:
		return c.Hidden, c.qDim()
	case ModK, ModV:
		return c.Hidden, c.kvDim()
	case ModO:
		return c.qDim(), c.Hidden
	case ModGate, ModUp:
		return c.Hidden, c.Intermediate
	default:
		return c.Intermediate, c.Hidden
	}
}

// NewAdapter returns a fresh adapter for a model of config c, initialised as
// PEFT does: A uniform in ±1/√In (kaiming-uniform with a=√5), B = 0, so the
// adapted model starts equal to the base model. seed makes A reproducible.
func NewAdapter(c *Config, ac AdapterConfig, seed uint64) (*Adapter, error) {
	ad, err := newZeroAdapter(c, ac)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x4c6f5241))
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr == nil {
				continue
			}
			bound := 1 / math.Sqrt(float64(lr.In))
			for i := range lr.A {
				lr.A[i] = float32((2*rng.Float64() - 1) * bound)
			}
		}
	}
	return ad, nil
}

// newZeroAdapter allocates an adapter whose A and B are all zero.
func newZeroAdapter(c *Config, ac AdapterConfig) (*Adapter, error) {
	if ac.Rank <= 0 {
		return nil, fmt.Errorf("lora: rank %d must be positive", ac.Rank)
	}
	if len(ac.Targets) == 0 {
		return nil, fmt.Errorf("lora: no target modules")
	}
	ad := &Adapter{Config: ac, Layers: make([][numModules]*LoRA, c.Layers), LayersPath: c.LayersPath}
	for l := range ad.Layers {
		for _, m := range ac.Targets {
			if m < 0 || m >= numModules {
				return nil, fmt.Errorf("lora: target %v out of range", m)
			}
			in, out := c.dims(m)
			r := ac.Rank
			ad.Layers[l][m] = &LoRA{
				A: make([]float32, r*in), B: make([]float32, out*r),
				DA: make([]float32, r*in), DB: make([]float32, out*r),
				R: r, In: in, Out: out, Scale: ac.Scale(),
			}
		}
	}
	return ad, nil
}

// ZeroGrad clears every DA and DB (Backward accumulates into them), with
// the backend's Zero once the adapter is placed: one Zero over all of them
// on a backend that allocates (kernels/cuda: one launch, not two a
// tensor).
func (ad *Adapter) ZeroGrad() {
	if ad.grads != nil {
		ad.be.Zero(ad.grads, len(ad.grads))
		return
	}
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr == nil {
				continue
			}
			if ad.be != nil {
				ad.be.Zero(lr.DA, len(lr.DA))
				ad.be.Zero(lr.DB, len(lr.DB))
			} else {
				clear(lr.DA)
				clear(lr.DB)
			}
		}
	}
}

// Place moves the adapter's tensors (A, B and their gradients) into be's
// memory, where the model's ops can reach them, copying their values:
// call it with the model's backend before Forward, Step or Merge. On a
// backend that is a kernels.Allocator the tensors become views of two
// allocations, one for A and B, one for DA and DB (Flat); on one that is
// not, the memory stays where it is. Free releases it. An adapter already
// placed on another backend is freed there.
func (ad *Adapter) Place(be kernels.Backend) error {
	if ad.be == be {
		return nil
	}
	_, toDevice := be.(kernels.Allocator)
	_, fromDevice := ad.be.(kernels.Allocator)
	if !toDevice && !fromDevice {
		ad.be = be
		return nil
	}
	if fromDevice {
		kernels.Synchronize(ad.be) // the host reads the adapter's memory
	}
	np, ng := 0, 0
	ad.Params(func(_ string, param, grad []float32) { np, ng = np+len(param), ng+len(grad) })
	params, err := kernels.AllocF32(be, np)
	if err != nil {
		return fmt.Errorf("lora: allocating %d float32 values on %s: %w", np, be.Name(), err)
	}
	var grads []float32 // none after DropGrads
	if ng > 0 {
		if grads, err = kernels.AllocF32(be, ng); err != nil {
			kernels.FreeF32(be, params)
			return fmt.Errorf("lora: allocating %d float32 values on %s: %w", ng, be.Name(), err)
		}
	}
	// carve copies x into the next len(x) values of *slab and returns them.
	carve := func(slab *[]float32, x []float32) []float32 {
		n := len(x)
		y := (*slab)[:n:n]
		copy(y, x)
		*slab = (*slab)[n:]
		return y
	}
	restP, restG := params, grads
	type moved struct{ a, b, da, db []float32 }
	var ms []moved
	for _, layer := range ad.Layers { // Params order: layer, module, A before B
		for _, lr := range layer {
			if lr == nil {
				continue
			}
			ms = append(ms, moved{carve(&restP, lr.A), carve(&restP, lr.B), carve(&restG, lr.DA), carve(&restG, lr.DB)})
		}
	}
	ad.release()
	i := 0
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr != nil {
				lr.A, lr.B, lr.DA, lr.DB = ms[i].a, ms[i].b, ms[i].da, ms[i].db
				i++
			}
		}
	}
	ad.be = be
	if toDevice {
		ad.params, ad.grads = params, grads
	} else { // Go memory: the tensors stay views of it, the garbage collector frees them
		ad.params, ad.grads = nil, nil
	}
	return nil
}

// DropGrads gives up the gradients DA and DB of an adapter that is only
// run forward (served, merged), half of its memory, on the host and, once
// placed, on the backend. Backward and an optimizer must not be run with
// it afterwards.
func (ad *Adapter) DropGrads() {
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr != nil {
				lr.DA, lr.DB = nil, nil
			}
		}
	}
	if ad.grads != nil {
		kernels.Synchronize(ad.be) // the ops that may still read them are done
		kernels.FreeF32(ad.be, ad.grads)
		ad.grads = nil
	}
}

// Flat returns the memory every A and B (params) and every DA and DB
// (grads) are views of, each in Params order with nothing between
// tensors, when the adapter is placed on a backend that allocates (a
// kernels.Allocator); nil, nil otherwise. An elementwise op over a whole
// slab (AdamW, a gradient clip's Scale) gives what one op a tensor gives.
func (ad *Adapter) Flat() (params, grads []float32) { return ad.params, ad.grads }

// Backend returns the backend the adapter was placed on (nil: none).
func (ad *Adapter) Backend() kernels.Backend { return ad.be }

// Free releases the adapter's memory on the backend it was placed on; the
// adapter must not be used afterwards. Without Place it only drops the
// references.
func (ad *Adapter) Free() {
	ad.release()
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr != nil {
				lr.A, lr.B, lr.DA, lr.DB = nil, nil, nil, nil
			}
		}
	}
	ad.be = nil
}

// release frees the tensors' memory on the backend they were placed on,
// when it allocated them (Flat's two allocations).
func (ad *Adapter) release() {
	if ad.be == nil || ad.params == nil {
		return
	}
	kernels.FreeF32(ad.be, ad.params)
	kernels.FreeF32(ad.be, ad.grads)
	ad.params, ad.grads = nil, nil
}

// ranks is a LoRA rank per module (0: not adapted).
type ranks [numModules]int

// ranks returns layer l's ranks (all 0 for a nil adapter).
func (ad *Adapter) ranks(l int) ranks {
	var r ranks
	for m, lr := range ad.layer(l) {
		if lr != nil {
			r[m] = lr.R
		}
	}
	return r
}

// maxRanks returns each module's largest rank over the layers.
func (ad *Adapter) maxRanks() ranks {
	var r ranks
	if ad == nil {
		return r
	}
	for l := range ad.Layers {
		for m, x := range ad.ranks(l) {
			r[m] = max(r[m], x)
		}
	}
	return r
}

// maxRank returns the largest rank of any module (0 for a nil adapter).
func (ad *Adapter) maxRank() int {
	r := 0
	for _, x := range ad.maxRanks() {
		r = max(r, x)
	}
	return r
}

// layer returns the LoRA updates of layer l, all nil for a nil adapter.
func (ad *Adapter) layer(l int) *[numModules]*LoRA {
	if ad == nil {
		return &noLoRA
	}
	return &ad.Layers[l]
}

var noLoRA [numModules]*LoRA // read-only: the adapter-off layer

// Params visits every LoRA tensor with its gradient, in a fixed order (layer,
// module, A before B), with the PEFT tensor name. Optimizers walk it.
func (ad *Adapter) Params(visit func(name string, param, grad []float32)) {
	for l, layer := range ad.Layers {
		for m, lr := range layer {
			if lr == nil {
				continue
			}
			p := ad.peftPrefix(l, Module(m))
			visit(p+"lora_A.weight", lr.A, lr.DA)
			visit(p+"lora_B.weight", lr.B, lr.DB)
		}
	}
}

// PEFTPrefix is the saved-adapter tensor name prefix of module m in layer l
// of a text model, e.g. "base_model.model.model.layers.3.self_attn.q_proj.".
func PEFTPrefix(l int, m Module) string { return peftPrefix("", l, m) }

// peftPrefix is PEFTPrefix for the adapter's model.
func (ad *Adapter) peftPrefix(l int, m Module) string { return peftPrefix(ad.LayersPath, l, m) }

func peftPrefix(layers string, l int, m Module) string {
	if layers == "" {
		layers = peft.LayersPath
	}
	return fmt.Sprintf("base_model.model.%s.%d.%s.", layers, l, m.Path())
}

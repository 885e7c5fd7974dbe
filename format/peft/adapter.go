package peft

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hone-rl/hone/format/fileset"
	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/safetensors"
)

// LoRA is the low-rank pair of one projection: A [R, In] and B [Out, R], row-major.
type LoRA struct {
	A          []float32 // [R, In]
	B          []float32 // [Out, R]
	R, In, Out int
}

// Adapter is a LoRA adapter in memory.
type Adapter struct {
	Config Config
	// Tensors maps layer → module name ("q_proj", …) → its pair.
	Tensors map[int]map[string]LoRA
	// DType is the storage dtype: F32 (also when empty), F16 or BF16. Read sets it
	// to the file's dtype (F32 when the file mixes dtypes).
	DType safetensors.DType
	// LayersPath is where the decoder layers sit in the model the adapter
	// was made for, one of LayersPaths ("" is LayersPath): Read sets it
	// from the tensor names, Write names the tensors by it.
	LayersPath string
}

// Set stores a pair, creating the layer's map when needed.
func (a *Adapter) Set(layer int, module string, l LoRA) {
	if a.Tensors == nil {
		a.Tensors = map[int]map[string]LoRA{}
	}
	if a.Tensors[layer] == nil {
		a.Tensors[layer] = map[string]LoRA{}
	}
	a.Tensors[layer][module] = l
}

// Layers returns the layers that have tensors, ascending.
func (a *Adapter) Layers() []int {
	var ls []int
	for l := range a.Tensors {
		ls = append(ls, l)
	}
	sort.Ints(ls)
	return ls
}

// DeltaW returns the dense update of one projection, ΔW = scaling · B·A, [Out, In]
// row-major, summed in float64.
func (a *Adapter) DeltaW(layer int, module string) ([]float32, error) {
	l, ok := a.Tensors[layer][module]
	if !ok {
		return nil, fmt.Errorf("peft: no LoRA for layer %d %s", layer, module)
	}
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("peft: layer %d %s: %w", layer, module, err)
	}
	s := a.Config.Scaling()
	dw := make([]float32, l.Out*l.In)
	row := make([]float64, l.In)
	for o := 0; o < l.Out; o++ {
		clear(row)
		for r := 0; r < l.R; r++ {
			b := float64(l.B[o*l.R+r])
			ar := l.A[r*l.In : (r+1)*l.In]
			for i, av := range ar {
				row[i] += b * float64(av)
			}
		}
		for i, v := range row {
			dw[o*l.In+i] = float32(s * v)
		}
	}
	return dw, nil
}

func (l LoRA) check() error {
	if l.R <= 0 || l.In <= 0 || l.Out <= 0 {
		return fmt.Errorf("sizes r=%d in=%d out=%d must be positive", l.R, l.In, l.Out)
	}
	if len(l.A) != l.R*l.In {
		return fmt.Errorf("A has %d values, [%d, %d] needs %d", len(l.A), l.R, l.In, l.R*l.In)
	}
	if len(l.B) != l.Out*l.R {
		return fmt.Errorf("B has %d values, [%d, %d] needs %d", len(l.B), l.Out, l.R, l.Out*l.R)
	}
	return nil
}

// Check verifies the adapter against a base model's config: every layer exists and
// every pair's in/out features equal the projection's.
func (a *Adapter) Check(m *hfconfig.Config) error {
	for _, layer := range a.Layers() {
		if layer >= m.NumHiddenLayers {
			return fmt.Errorf("peft: adapter has layer %d but the model has %d layers", layer, m.NumHiddenLayers)
		}
		for module, l := range a.Tensors[layer] {
			in, out, err := m.LinearDims(module)
			if err != nil {
				return fmt.Errorf("peft: layer %d: %w", layer, err)
			}
			if l.In != in || l.Out != out {
				return fmt.Errorf("peft: layer %d %s: LoRA maps %d→%d features, the model's projection %d→%d", layer, module, l.In, l.Out, in, out)
			}
		}
	}
	return nil
}

// nameRE matches the saved PEFT tensor names Hone understands.
var nameRE = regexp.MustCompile(`^base_model\.model\.(model\.layers|model\.language_model\.layers|language_model\.model\.layers)\.(0|[1-9][0-9]{0,5})\.(self_attn|mlp)\.([a-z_]+)\.lora_([AB])\.weight$`)

// Read loads the adapter in dir (adapter_config.json + adapter_model.safetensors).
func Read(dir string) (*Adapter, error) {
	cpath := filepath.Join(dir, ConfigName)
	wpath := filepath.Join(dir, WeightsName)
	// Stat first: opening a named pipe with no writer to read it blocks,
	// and a device never ends, so that a reader polling for new steps
	// (serve/adapters) would stop for good.
	for _, p := range []string{cpath, wpath} {
		if err := fileset.CheckRegular(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("peft: %w", err)
		}
	}
	raw, err := ReadConfigFile(cpath)
	if err != nil {
		return nil, fmt.Errorf("peft: %w", err)
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpath, err)
	}
	f, err := safetensors.OpenFile(wpath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, berr := os.Stat(filepath.Join(dir, "adapter_model.bin")); berr == nil {
				return nil, fmt.Errorf("peft: %s has only adapter_model.bin (pickle); convert it to %s", dir, WeightsName)
			}
		}
		return nil, fmt.Errorf("peft: %w", err)
	}
	defer f.Close()
	a, err := fromFile(cfg, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", wpath, err)
	}
	return a, nil
}

func fromFile(cfg Config, f *safetensors.File) (*Adapter, error) {
	a := &Adapter{Config: cfg, Tensors: map[int]map[string]LoRA{}}
	dtypes := map[safetensors.DType]bool{}
	type half struct {
		vals  []float32
		shape []int
	}
	halves := map[string]map[string]half{} // "layer/module" → "A"/"B"
	for _, name := range f.Names() {
		m := nameRE.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("peft: unexpected tensor %q (want base_model.model.<%s>.N.<self_attn|mlp>.<module>.lora_<A|B>.weight)", name, strings.Join(LayersPaths(), "|"))
		}
		if a.LayersPath == "" {
			a.LayersPath = m[1]
		} else if m[1] != a.LayersPath {
			return nil, fmt.Errorf("peft: tensor %q: layers under %s, but others under %s", name, m[1], a.LayersPath)
		}
		layer, _ := strconv.Atoi(m[2])
		module, which := m[4], m[5]
		if p, err := ModulePath(module); err != nil || p != m[3]+"."+module {
			return nil, fmt.Errorf("peft: tensor %q: %q is not a known %s projection", name, module, m[3])
		}
		if !cfg.targets(module) {
			return nil, fmt.Errorf("peft: tensor %q: module %s is not in target_modules %v", name, module, cfg.TargetModules)
		}
		// PEFT puts LoRA only on the layers layers_to_transform lists, so it
		// drops another layer's tensors when it loads the adapter: applied
		// here they would make a model PEFT does not.
		if len(cfg.LayersToTransform) > 0 && !slices.Contains(cfg.LayersToTransform, layer) {
			return nil, fmt.Errorf("peft: tensor %q: layer %d is not in layers_to_transform %v", name, layer, cfg.LayersToTransform)
		}
		info, _ := f.Info(name)
		switch info.DType {
		case safetensors.F32, safetensors.F16, safetensors.BF16:
		default:
			return nil, fmt.Errorf("peft: tensor %q has dtype %s (want F32, F16 or BF16)", name, info.DType)
		}
		if len(info.Shape) != 2 {
			return nil, fmt.Errorf("peft: tensor %q has shape %v, want 2 dimensions", name, info.Shape)
		}
		dtypes[info.DType] = true
		vals, err := f.Float32(name)
		if err != nil {
			return nil, err
		}
		if err := safetensors.CheckFinite(name, vals, 0); err != nil {
			return nil, fmt.Errorf("peft: %w", err)
		}
		key := fmt.Sprintf("%d/%s", layer, module)
		if halves[key] == nil {
			halves[key] = map[string]half{}
		}
		halves[key][which] = half{vals, info.Shape}
	}
	if len(halves) == 0 {
		return nil, fmt.Errorf("peft: no LoRA tensors")
	}
	for key, h := range halves {
		var layer int
		var module string
		if _, err := fmt.Sscanf(key, "%d/%s", &layer, &module); err != nil {
			return nil, err
		}
		A, okA := h["A"]
		B, okB := h["B"]
		if !okA || !okB {
			return nil, fmt.Errorf("peft: layer %d %s has lora_A without lora_B or the reverse", layer, module)
		}
		r, in, out := A.shape[0], A.shape[1], B.shape[0]
		if r != cfg.R || B.shape[1] != cfg.R {
			return nil, fmt.Errorf("peft: layer %d %s: A %v and B %v do not have rank r = %d", layer, module, A.shape, B.shape, cfg.R)
		}
		if in == 0 || out == 0 {
			return nil, fmt.Errorf("peft: layer %d %s: empty projection (A %v, B %v)", layer, module, A.shape, B.shape)
		}
		a.Set(layer, module, LoRA{A: A.vals, B: B.vals, R: r, In: in, Out: out})
	}
	a.DType = safetensors.F32
	if len(dtypes) == 1 {
		for d := range dtypes {
			a.DType = d
		}
	}
	return a, nil
}

// Write saves the adapter into dir atomically: both files are written into a new
// temporary folder beside dir, which is then renamed to dir. dir must not exist or
// be an empty folder (which is replaced); missing parents are created. A reader sees
// either no adapter or a complete one.
func Write(dir string, a *Adapter) error { return WriteWith(dir, a, nil) }

// WriteWith is Write with a hook: extra, when not nil, is called with the temporary
// folder after the adapter files are in it and before the folder is renamed into
// place, so companion files (a trainer's optimizer state) appear atomically with the
// adapter. An error from extra abandons the whole folder.
func WriteWith(dir string, a *Adapter, extra func(tmpDir string) error) error {
	cfg, ts, err := a.encode()
	if err != nil {
		return fmt.Errorf("%w (writing %s)", err, dir)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("peft: %s exists and is not empty; write each adapter to a new folder", dir)
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("peft: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return fmt.Errorf("peft: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := safetensors.WriteAtomic(filepath.Join(tmp, ConfigName), func(w io.Writer) error {
		_, err := w.Write(cfg)
		return err
	}); err != nil {
		return fmt.Errorf("peft: %w", err)
	}
	if err := safetensors.Write(filepath.Join(tmp, WeightsName), ts, nil); err != nil {
		return fmt.Errorf("peft: %w", err)
	}
	if extra != nil {
		if err := extra(tmp); err != nil {
			return fmt.Errorf("peft: writing %s: %w", dir, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes 0700
		return fmt.Errorf("peft: %w", err)
	}
	// Go's os.Rename refuses to replace a directory, even an empty one: remove the
	// empty target first (Remove fails, harmlessly, if something appeared in it).
	if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("peft: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("peft: move adapter into place: %w", err)
	}
	ok = true
	if d, err := os.Open(parent); err == nil { // make the rename durable; best effort
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// encode validates the adapter and returns the config bytes and the tensors.
func (a *Adapter) encode() ([]byte, []safetensors.Tensor, error) {
	c := a.Config
	if c.PeftType == "" {
		c.PeftType = "LORA"
	}
	if c.TaskType == "" {
		c.TaskType = "CAUSAL_LM"
	}
	if c.Bias == "" {
		c.Bias = "none"
	}
	if c.TaskType != "CAUSAL_LM" {
		return nil, nil, fmt.Errorf("peft: task_type %q is not supported (only CAUSAL_LM)", c.TaskType)
	}
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	// Canonical module order keeps the file byte-identical for equal adapters.
	var mods []string
	for _, m := range Modules() {
		if c.targets(m) {
			mods = append(mods, m)
		}
	}
	c.TargetModules = mods
	dtype := a.DType
	if dtype == "" {
		dtype = safetensors.F32
	}
	if len(a.Tensors) == 0 {
		return nil, nil, fmt.Errorf("peft: adapter has no tensors")
	}
	if a.LayersPath != "" && !slices.Contains(LayersPaths(), a.LayersPath) {
		return nil, nil, fmt.Errorf("peft: layers path %q is not one of %s", a.LayersPath, strings.Join(LayersPaths(), ", "))
	}
	var ts []safetensors.Tensor
	for _, layer := range a.Layers() {
		if layer < 0 {
			return nil, nil, fmt.Errorf("peft: negative layer %d", layer)
		}
		if len(a.Tensors[layer]) == 0 {
			return nil, nil, fmt.Errorf("peft: layer %d has an empty module map", layer)
		}
		for module, l := range a.Tensors[layer] {
			if _, err := ModulePath(module); err != nil {
				return nil, nil, err
			}
			if !c.targets(module) {
				return nil, nil, fmt.Errorf("peft: layer %d has a LoRA for %s, which target_modules %v lacks", layer, module, c.TargetModules)
			}
			if err := l.check(); err != nil {
				return nil, nil, fmt.Errorf("peft: layer %d %s: %w", layer, module, err)
			}
			if l.R != c.R {
				return nil, nil, fmt.Errorf("peft: layer %d %s: rank %d but config r = %d", layer, module, l.R, c.R)
			}
			for _, m := range []struct {
				which string
				shape []int
				vals  []float32
			}{{"A", []int{l.R, l.In}, l.A}, {"B", []int{l.Out, l.R}, l.B}} {
				x, err := safetensors.FromFloat32Tensor(TensorNameAt(a.LayersPath, layer, module, m.which), dtype, m.shape, m.vals)
				if err != nil {
					return nil, nil, err
				}
				if i := firstOverflow(m.vals, x); i >= 0 {
					return nil, nil, fmt.Errorf("peft: layer %d %s: lora_%s element %d is %v, past the range of %s, where it would be saved as an infinity; write F32",
						layer, module, m.which, i, m.vals[i], dtype)
				}
				ts = append(ts, x)
			}
		}
	}
	out := struct {
		Config
		// Keys PEFT always writes; fixed here because Hone supports only their
		// defaults, written so strict readers find them.
		InitLoraWeights bool           `json:"init_lora_weights"`
		RankPattern     map[string]int `json:"rank_pattern"`
		AlphaPattern    map[string]int `json:"alpha_pattern"`
		LoraBias        bool           `json:"lora_bias"`
		LayersPattern   *string        `json:"layers_pattern"`
		ExcludeModules  *string        `json:"exclude_modules"`
		AutoMapping     *string        `json:"auto_mapping"`
	}{Config: c, InitLoraWeights: true, RankPattern: map[string]int{}, AlphaPattern: map[string]int{}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, nil, fmt.Errorf("peft: encode config: %w", err)
	}
	return buf.Bytes(), ts, nil
}

// firstOverflow returns the index of the first finite value of vals that
// x, vals encoded, holds as an infinity (−1: none): F16 tops out at 65504,
// and a value that rounds past it (or past BF16's ~3.39e38) is stored as
// ±Inf, which the loaders take as it is.
func firstOverflow(vals []float32, x safetensors.Tensor) int {
	if x.DType == safetensors.F32 {
		return -1
	}
	dec := make([]float32, len(vals))
	if safetensors.ToFloat32(dec, x.DType, x.Data) != nil {
		return -1 // FromFloat32Tensor made x from vals: the sizes agree
	}
	for i, v := range dec {
		if math.IsInf(float64(v), 0) && !math.IsInf(float64(vals[i]), 0) {
			return i
		}
	}
	return -1
}

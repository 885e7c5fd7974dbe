package serve

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/hone-rl/hone/format/hfconfig"
	"github.com/hone-rl/hone/format/modelfolder"
	"github.com/hone-rl/hone/serve/engine"
)

// genDefaults are the sampling defaults of a request that leaves a field
// out, from generation_config.json under --generation-config auto or a
// folder's path; nil and 0 keep the server's fixed ones.
type genDefaults struct {
	temperature, topP, minP, repetitionPenalty *float64
	topK                                       *int
	// maxTokens (max_new_tokens) is max_tokens' default and, as in vLLM,
	// its cap: a request asking for more gets this many.
	maxTokens int
	// src names the file they came from (genConfigSource), for a request
	// refused over the clamp: the model folder's or --generation-config's.
	src string
}

// genConfigSource is the generation_config.json that mode
// (Options.GenerationConfig) takes the defaults from, and the name the log
// and errors give it: the model folder's g (nil: none) for auto and vllm
// (which reads none), or, as in vLLM, the one in the folder mode names
// otherwise. A folder without one is an error, where vLLM quietly keeps
// its fixed defaults: a folder named by hand that holds none is a mistake
// the server would otherwise hide.
func genConfigSource(mode string, g *hfconfig.GenerationConfig) (*hfconfig.GenerationConfig, string, error) {
	if mode == "auto" || mode == "vllm" {
		return g, "the model folder's " + hfconfig.GenerationConfigName, nil
	}
	path := filepath.Join(mode, hfconfig.GenerationConfigName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("serve: --generation-config %q (auto, vllm, or a folder holding %s): %w", mode, hfconfig.GenerationConfigName, err)
	}
	g, err = hfconfig.ParseGenerationConfig(data)
	if err != nil {
		return nil, "", fmt.Errorf("serve: --generation-config: %s: %w", path, err)
	}
	return g, path, nil
}

// stopTokens are the ids a reply stops on under mode
// (Options.GenerationConfig): the model folder's (modelfolder.StopTokens)
// for auto and vllm; for a folder, as vLLM, whose input processor adds the
// eos_token_id of the generation config it read to each request's stop
// ids, that folder's generation_config.json's eos_token_id, then the
// tokenizer's eos_token. The model folder's generation_config.json is not
// read then, in vLLM nor here; train's layout still ends a trained turn at
// the model folder's ids, which a folder given for serving does not change.
func stopTokens(mode string, g *hfconfig.GenerationConfig, f *modelfolder.Folder) []int {
	if mode == "auto" || mode == "vllm" || g == nil {
		return f.StopTokens
	}
	return modelfolder.StopTokens(g.EOSTokenIDs, f.Template, f.Tokenizer)
}

// droppedStops are the ids of model (the model folder's stop tokens) that
// stops (what replies stop on) leaves out: under --generation-config
// <folder>, those its generation_config.json does not list.
func droppedStops(model, stops []int) []int {
	var out []int
	for _, id := range model {
		if !slices.Contains(stops, id) {
			out = append(out, id)
		}
	}
	return out
}

// loadGenDefaults reads the defaults of mode (Options.GenerationConfig)
// from g, the generation_config.json genConfigSource found (nil: none) and
// names src, as
// vLLM does: only the keys it reads, and only with values other than
// transformers' defaults (a top_k of 50 is transformers' default, not the
// model's choice, and vLLM leaves it off). Values out of the range a
// request may send are an error naming the key.
func loadGenDefaults(mode string, g *hfconfig.GenerationConfig, src string) (genDefaults, error) {
	var d genDefaults
	if mode == "vllm" {
		return d, nil
	}
	if g == nil {
		return d, nil
	}
	d.src = src
	differs := func(v *float64, def float64) *float64 {
		if v != nil && *v != def {
			return v
		}
		return nil
	}
	d.temperature, d.topP, d.repetitionPenalty = differs(g.Temperature, 1), differs(g.TopP, 1), differs(g.RepetitionPenalty, 1)
	d.minP = g.MinP
	if g.TopK != nil && *g.TopK != 50 {
		d.topK = g.TopK
	}
	// The request's own bounds (shapeParams), so that a default is
	// never a value a request could not send.
	var f samplingFields
	f.Temperature, f.TopP, f.TopK, f.MinP, f.RepetitionPenalty = d.temperature, d.topP, d.topK, d.minP, d.repetitionPenalty
	var p engine.Params
	if err := shapeParams(&f, &p); err != nil {
		return d, fmt.Errorf("serve: %s: %v (--generation-config vllm does not read it)", src, err)
	}
	if g.MaxNewTokens != nil {
		if *g.MaxNewTokens < 1 {
			return d, fmt.Errorf("serve: %s: max_new_tokens must be at least 1, got %d (--generation-config vllm does not read it)", src, *g.MaxNewTokens)
		}
		d.maxTokens = *g.MaxNewTokens
	}
	return d, nil
}

// logAttrs are the defaults as log attributes, those set only.
func (d genDefaults) logAttrs() []any {
	var out []any
	for _, kv := range []struct {
		k string
		v *float64
	}{{"temperature", d.temperature}, {"top_p", d.topP}, {"min_p", d.minP}, {"repetition_penalty", d.repetitionPenalty}} {
		if kv.v != nil {
			out = append(out, slog.Float64(kv.k, *kv.v))
		}
	}
	if d.topK != nil {
		out = append(out, slog.Int("top_k", *d.topK))
	}
	if d.maxTokens > 0 {
		out = append(out, slog.Int("max_tokens", d.maxTokens))
	}
	return out
}

// apply sets the defaults in p, before the request's own fields.
func (d genDefaults) apply(p *engine.Params) {
	if d.temperature != nil {
		p.Temperature = *d.temperature
	}
	if d.topP != nil {
		p.TopP = *d.topP
	}
	if d.topK != nil {
		p.TopK = max(*d.topK, 0)
	}
	if d.minP != nil {
		p.MinP = *d.minP
	}
	if d.repetitionPenalty != nil {
		p.RepetitionPenalty = *d.repetitionPenalty
	}
}

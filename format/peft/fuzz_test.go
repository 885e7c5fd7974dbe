package peft

import (
	"testing"
)

// FuzzParseConfig checks that ParseConfig never panics and only accepts configs
// Write would also accept.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"peft_type":"LORA","task_type":"CAUSAL_LM","r":8,"lora_alpha":16,"target_modules":["q_proj","v_proj"],"bias":"none"}`))
	f.Add([]byte(`{"peft_type":"LORA","r":8,"lora_alpha":16,"target_modules":"all-linear","layers_to_transform":[0,1]}`))
	f.Add([]byte(`{"peft_type":"LORA","r":8,"lora_alpha":16,"target_modules":["q_proj"],"use_dora":true,"modules_to_save":[]}`))
	f.Add([]byte(`{"peft_type":"LORA","r":-1,"lora_alpha":1e400,"target_modules":[1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		if err := c.validate(); err != nil {
			t.Fatalf("accepted config fails validation: %v", err)
		}
		if s := c.Scaling(); !(s > 0) {
			t.Fatalf("scaling %v", s)
		}
	})
}

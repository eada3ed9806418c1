package grammar

import "testing"

func TestSmoke(t *testing.T) {
	g, err := CompileSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"enum":["a","b"]}}},"required":["name","age"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`{"name":"x\u00e9\"","age":-12,"tags":["a","b"]}`, "{\n  \"name\": \"é\", \"age\": 0}", `{"name":"","age":1}`} {
		m := g.NewMatcher()
		if !m.Advance([]byte(s)) || !m.Done() {
			t.Errorf("%s rejected", s)
		}
	}
	for _, s := range []string{`{"age":1}`, `{"name":"x","age":1.5}`, `{"name":"x","age":1,"tags":["c"]}`, `{"name":"\ud800"}`} {
		m := g.NewMatcher()
		if m.Advance([]byte(s)) && m.Done() {
			t.Errorf("%s accepted", s)
		}
	}
}

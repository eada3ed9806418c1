package server

import (
	"strings"
	"testing"
)

// An agent's tool loop sends the reasoning of the assistant turns back:
// Anthropic thinking blocks and Responses reasoning items reach the template
// as message.reasoning_content, so Qwen3's template renders the reasoning
// of the turns after the last user message (the current tool loop) as the
// model wrote it, and leaves earlier turns' reasoning out. They used to be
// dropped everywhere, so the loop's prompt lost them.
func TestReasoningOfTheToolLoop(t *testing.T) {
	src := chatTemplate(t, "tools/Qwen-Qwen3-0.6B.jinja")
	const inLoop = "<think>\nNEED-TOOL\n</think>\n\n<tool_call>"

	tools := `"tools":[{"name":"get_weather","description":"w","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	msgs := `[{"role":"user","content":"Old?"},{"role":"assistant","content":[{"type":"thinking","thinking":"OLD-THOUGHT","signature":""},{"type":"text","text":"Old."}]},` +
		`{"role":"user","content":"Weather?"},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"NEED-TOOL","signature":""},{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"sunny"}]}]`
	ab, _, post := anthropicServer(t, src, []string{"ok"})
	r := post("/v1/messages", `{"model":"tiny","max_tokens":9,`+tools+`,"messages":`+msgs+`}`)
	wantStatus(t, r, 200)
	if p := ab.last().lastReq().Prompt; !strings.Contains(p, inLoop) || strings.Contains(p, "OLD-THOUGHT") {
		t.Errorf("anthropic: prompt %q", p)
	}

	rb, rpost := responsesServer(t, src, []string{"ok"})
	input := `[{"role":"user","content":"Old?"},{"type":"reasoning","id":"rs_0","summary":[],"content":[{"type":"reasoning_text","text":"OLD-THOUGHT"}]},` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Old."}]},{"role":"user","content":"Weather?"},` +
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"short"}],"content":[{"type":"reasoning_text","text":"NEED-TOOL"}]},` +
		`{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"sunny"}]`
	rtool := `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`
	wantStatus(t, rpost(`{"model":"tiny","tools":[`+rtool+`],"input":`+input+`}`), 200)
	if p := rb.last().lastReq().Prompt; !strings.Contains(p, inLoop) || strings.Contains(p, "OLD-THOUGHT") {
		t.Errorf("responses: prompt %q", p)
	}
}

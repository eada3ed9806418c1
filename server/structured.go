package server

// Structured output: Ollama's format ("json" or a JSON schema) and OpenAI's
// response_format (json_object, json_schema) compile to a grammar that
// constrains sampling (runtime/grammar), so the reply is always a complete,
// valid document unless the token limit cuts it short. A schema the
// compiler cannot honour is a 400 naming the keyword.

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/woolly-llm/woolly/runtime/grammar"
)

func compileSchema(field string, schema json.RawMessage) (*grammar.Grammar, error) {
	if err := checkSchema(field, schema); err != nil {
		return nil, err
	}
	g, err := grammar.CompileSchema(schema)
	if err != nil {
		return nil, badRequest("%s: %v", field, err)
	}
	return g, nil
}

// decodeStrict decodes the object raw of a request's field into v; an
// unknown member or a wrong type is a 400 naming the field.
func decodeStrict(raw json.RawMessage, v any, field string) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return badRequest("%s: %v", field, err)
	}
	return nil
}

func absent(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null" || s == `""`
}

// ollamaFormat reads Ollama's format: "json" (any JSON object) or a schema.
func ollamaFormat(raw json.RawMessage) (*grammar.Grammar, error) {
	if absent(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "json" {
			return nil, badRequest(`format must be "json" or a JSON schema, not %s`, quoteShort(s))
		}
		return grammar.JSONObject(), nil
	}
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return nil, badRequest(`format must be "json" or a JSON schema (an object)`)
	}
	return compileSchema("format", raw)
}

// openaiResponseFormat reads response_format: {"type":"text"},
// {"type":"json_object"} (any JSON object; with llama-server's "schema"
// extension, that schema) or {"type":"json_schema","json_schema":{"name",
// "schema","strict","description"}}. strict may be true or false: the
// output follows the schema either way.
func openaiResponseFormat(raw json.RawMessage) (*grammar.Grammar, error) {
	if absent(raw) {
		return nil, nil
	}
	var rf struct {
		Type       string          `json:"type"`
		Schema     json.RawMessage `json:"schema"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := decodeStrict(raw, &rf, "response_format"); err != nil {
		return nil, err
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		if !absent(rf.Schema) {
			return compileSchema("response_format.schema", rf.Schema)
		}
		return grammar.JSONObject(), nil
	case "json_schema":
		if rf.JSONSchema == nil {
			return nil, badRequest("response_format.json_schema is required with type json_schema")
		}
		if absent(rf.JSONSchema.Schema) {
			// OpenAI: without a schema, any JSON object
			return grammar.JSONObject(), nil
		}
		return compileSchema("response_format.json_schema.schema", rf.JSONSchema.Schema)
	}
	return nil, badRequest(`response_format.type must be "text", "json_object" or "json_schema", not %s`, quoteShort(rf.Type))
}

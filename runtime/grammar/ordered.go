package grammar

import (
	"bytes"
	"fmt"

	"github.com/woolly-llm/woolly/internal/jsonorder"
)

// omap is a JSON object that keeps its keys' order (a schema's properties
// are generated in the order written).
type omap struct {
	keys []string
	m    map[string]any
}

// MarshalJSON writes the object with its keys in order.
func (o *omap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(literalBytes(k))
		b.WriteByte(':')
		b.Write(literalBytes(o.m[k]))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeOrdered decodes one JSON value: objects as *omap, arrays as []any,
// numbers as json.Number. A repeated key is an error.
func decodeOrdered(data []byte) (any, error) {
	return jsonorder.Decoder{Object: func(keys []string, vals []any) (any, error) {
		o := &omap{keys: keys, m: make(map[string]any, len(keys))}
		for i, k := range keys {
			if _, dup := o.m[k]; dup {
				return nil, fmt.Errorf("key %q appears twice", k)
			}
			o.m[k] = vals[i]
		}
		return o, nil
	}}.Decode(data)
}

package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '{':
			o := &omap{m: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := decodeValue(d)
				if err != nil {
					return nil, err
				}
				if _, dup := o.m[k]; dup {
					return nil, fmt.Errorf("key %q appears twice", k)
				}
				o.keys = append(o.keys, k)
				o.m[k] = v
			}
			_, err := d.Token()
			return o, err
		case '[':
			list := []any{}
			for d.More() {
				v, err := decodeValue(d)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := d.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", x)
	}
	return t, nil
}

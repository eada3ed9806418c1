// Package jsonorder decodes JSON text keeping each object's key order, which
// encoding/json's maps lose: chat templates write tool arguments back in the
// order the client sent them, and a schema's properties are generated in the
// order they are written.
package jsonorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decoder says how objects and numbers become Go values; arrays become []any,
// strings, booleans and null what encoding/json's Token gives.
type Decoder struct {
	// Object receives one object's members in the order written (a repeated
	// key appears as often as it was written).
	Object func(keys []string, vals []any) (any, error)
	// Number converts a number (nil: the json.Number itself).
	Number func(json.Number) (any, error)
}

// Decode reads exactly one JSON value from data.
func (c Decoder) Decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := c.value(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 1000

func (c Decoder) value(d *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("JSON nested deeper than %d", maxDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		var keys []string
		list := []any{}
		for d.More() {
			if x == '{' {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				keys = append(keys, kt.(string)) // the decoder only yields strings as keys
			}
			v, err := c.value(d, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		if x == '{' {
			return c.Object(keys, list)
		}
		return list, nil
	case json.Number:
		if c.Number != nil {
			return c.Number(x)
		}
	}
	return t, nil
}

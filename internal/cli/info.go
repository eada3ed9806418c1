package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/woolly-llm/woolly/internal/ggufinfo"
	"github.com/woolly-llm/woolly/loader"
)

// runInfo is `woolly info`: what a GGUF file holds (internal/ggufinfo).
func runInfo(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("info", stderr, "usage: woolly info [--json] MODEL   (or -m MODEL)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	model := fs.String("m", "", "GGUF model `path`")
	// Flags may come before or after the model path.
	var pos []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	path := *model
	switch {
	case len(pos) > 1 || (len(pos) == 1 && path != "" && pos[0] != path):
		return fmt.Errorf("expected one model path, got %q", append(pos, path))
	case len(pos) == 1:
		path = pos[0]
	case path == "":
		fs.Usage()
		return errUsage
	}

	f, err := loader.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if *asJSON {
		b, err := json.Marshal(ggufinfo.JSON(f))
		if err != nil {
			return err
		}
		b = append(b, '\n')
		_, err = stdout.Write(b)
		return err
	}
	return ggufinfo.Text(f, stdout)
}

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/woolly-llm/woolly/loader"
	"github.com/woolly-llm/woolly/runtime/tokenizer"
)

func runTokenize(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tokenize", stderr)
	model := fs.String("m", "", "model or vocabulary `path` (GGUF)")
	prompt := fs.String("p", "", "`text` to tokenize")
	file := fs.String("f", "", "tokenize the bytes of `file`")
	noBOS := fs.Bool("no-bos", false, "do not add BOS")
	noSpecial := fs.Bool("no-parse-special", false, "treat special-token text as plain text")
	asJSON := fs.Bool("json", false, "print {\"ids\":[...]}")
	if err := parseModelFlags(fs, args, model); err != nil {
		return err
	}
	if !flagGiven(fs, "p") && *file == "" {
		return usageError(fs, "give -p TEXT or -f FILE")
	}
	text, err := readPrompt(fs, *prompt, *file)
	if err != nil {
		return err
	}
	f, err := loader.Open(*model)
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *model, err)
	}
	ids, err := tok.Encode(text, !*noBOS && tok.AddBOS(), !*noSpecial)
	if err != nil {
		return err
	}
	if *asJSON {
		if ids == nil {
			ids = []int32{}
		}
		return json.NewEncoder(stdout).Encode(struct {
			IDs []int32 `json:"ids"`
		}{ids})
	}
	var buf []byte
	for _, id := range ids {
		buf = strconv.AppendInt(buf, int64(id), 10)
		buf = append(buf, '\t')
		buf = append(buf, tok.Piece(id)...)
		buf = append(buf, '\n')
	}
	_, err = stdout.Write(buf)
	return err
}

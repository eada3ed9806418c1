package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/woolly-llm/woolly/loader"
)

// BenchmarkEncode tokenizes ref/text/dev.txt repeated to about 100 KB.
func BenchmarkEncode(b *testing.B) {
	dir := sharedDir(b)
	txt, err := os.ReadFile(filepath.Join(dir, "ref", "text", "dev.txt"))
	if err != nil {
		b.Skip(err)
	}
	text := strings.Repeat(string(txt)+"\n", 100_000/len(txt)+1)
	for _, name := range []string{"llama-spm", "gpt-2", "falcon", "deepseek-llm", "deepseek-coder", "starcoder"} {
		tok := loadTok(b, vocabPath(b, name))
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for i := 0; i < b.N; i++ {
				if _, err := tok.Encode(text, false, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFromGGUF measures building a tokenizer from an open file.
func BenchmarkFromGGUF(b *testing.B) {
	for _, name := range []string{"llama-spm", "deepseek-llm"} {
		f, err := loader.Open(vocabPath(b, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := FromGGUF(f); err != nil {
					b.Fatal(err)
				}
			}
		})
		f.Close()
	}
}

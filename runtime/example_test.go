package runtime_test

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"github.com/woolly-llm/woolly/runtime"
)

// Greedy generation with a small model from ../shared. It prints
// ", there was a little girl named Lily. She loved to play", llama.cpp's
// greedy continuation (TestParityGreedy checks it against ../shared/ref).
func Example() {
	path := filepath.Join("..", "..", "shared", "models", "stories260K-F32.gguf")
	m, err := runtime.Load(path, runtime.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	_, err = m.Generate(context.Background(), runtime.GenerateOptions{
		Prompt:    "Once upon a time",
		MaxTokens: 16,
	}, func(t runtime.Token) error {
		fmt.Print(t.Text)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
}

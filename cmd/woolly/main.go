// Command woolly runs GGUF language models on the CPU: `woolly run`,
// `woolly chat`, `woolly serve` (an Ollama- and OpenAI-compatible server),
// `woolly bench` and the tools around them. The commands are package
// internal/cli; this is their entry point, and the only place that exits.
package main

import (
	"os"

	"github.com/woolly-llm/woolly/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }

package cli

// The models directory's verbs, as Ollama spells them: list (ls), show, rm,
// cp, import, ps (asks a running server), and pull (refused: no downloads).
// The directory and the names are internal/models'.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/woolly-llm/woolly/internal/models"
	"github.com/woolly-llm/woolly/internal/repl"
	"github.com/woolly-llm/woolly/runtime"
	"github.com/woolly-llm/woolly/server"
)

// positional parses a verb's flags (anywhere among its arguments) and
// checks the count of its positional arguments.
func positional(fs *flag.FlagSet, args []string, min, max int, what string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		return nil, usageError(fs, "want %s, got %d argument(s)", what, len(pos))
	}
	return pos, nil
}

// inModelsDir is positional for a verb of the models directory, then that
// directory.
func inModelsDir(fs *flag.FlagSet, args []string, min, max int, what string) (string, []string, error) {
	pos, err := positional(fs, args, min, max, what)
	if err != nil {
		return "", nil, err
	}
	dir, err := models.Dir()
	return dir, pos, err
}

// newTable is the verbs' tab-aligned output to w (columns three spaces
// apart), its first line written; Flush writes it out.
func newTable(w io.Writer, first string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, first)
	return tw
}

func runList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("list", stderr, "usage: woolly list", "Lists the models of the models directory (WOOLLY_MODELS, default ~/.woolly/models).")
	dir, _, err := inModelsDir(fs, args, 0, 0, "no arguments")
	if err != nil {
		return err
	}
	es, err := models.List(dir)
	if err != nil {
		return err
	}
	tw := newTable(stdout, "NAME\tSIZE\tMODIFIED\t")
	for _, e := range es {
		where := ""
		if e.Link != "" {
			where = "-> " + e.Link
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", models.Display(e.Name), humanize.Bytes(uint64(e.Size)), humanize.Time(e.ModTime), where)
	}
	return tw.Flush()
}

func runRm(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rm", stderr, "usage: woolly rm NAME [NAME...]")
	dir, names, err := inModelsDir(fs, args, 1, -1, "one or more model names")
	if err != nil {
		return err
	}
	for _, n := range names { // check them all before removing any
		if _, _, err := models.Resolve(dir, n); err != nil {
			return err
		}
	}
	for _, n := range names {
		c, err := models.Remove(dir, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted '%s'\n", models.Display(c))
	}
	return nil
}

func runCp(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cp", stderr, "usage: woolly cp SOURCE DESTINATION")
	dir, pos, err := inModelsDir(fs, args, 2, 2, "SOURCE DESTINATION")
	if err != nil {
		return err
	}
	n, err := models.Copy(dir, pos[0], pos[1])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "copied '%s' to '%s'\n", pos[0], models.Display(n))
	return nil
}

func runImport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("import", stderr, "usage: woolly import FILE [NAME]",
		"Copies the GGUF FILE into the models directory as NAME (default: the file's name without .gguf).")
	link := fs.Bool("link", false, "a symbolic link to FILE instead of a copy")
	force := fs.Bool("force", false, "replace a model of that name")
	dir, pos, err := inModelsDir(fs, args, 1, 2, "FILE [NAME]")
	if err != nil {
		return err
	}
	name := ""
	if len(pos) == 2 {
		name = pos[1]
	}
	n, err := models.Import(dir, pos[0], name, models.ImportOptions{Link: *link, Force: *force})
	if err != nil {
		return err
	}
	how := "copied"
	if *link {
		how = "linked"
	}
	fmt.Fprintf(stdout, "%s %s as '%s' (run it: woolly run %s)\n", how, pos[0], models.Display(n), n)
	return nil
}

func runPull(args []string, stdout, stderr io.Writer) error {
	//lint:ignore ST1005 Woolly is a name
	return errors.New("Woolly downloads nothing: fetch the GGUF file yourself, then 'woolly import FILE [NAME]' brings it into the models directory")
}

func runShow(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("show", stderr, "usage: woolly show NAME|PATH", "Prints the model's details, capabilities, default parameters and chat template.")
	onlyTemplate := fs.Bool("template", false, "print only the chat template")
	onlyParams := fs.Bool("parameters", false, "print only the default parameters")
	pos, err := positional(fs, args, 1, 1, "one model")
	if err != nil {
		return err
	}
	if *onlyTemplate && *onlyParams {
		return usageError(fs, "--template and --parameters both given: pick one")
	}
	p, err := resolveModel(pos[0])
	if err != nil {
		return err
	}
	meta, err := server.RuntimeBackend{}.Inspect(p)
	if err != nil {
		return err
	}
	params := repl.Params{Sampler: runtime.DefaultSamplerOptions(), NumPredict: -1}
	switch {
	case *onlyTemplate:
		if strings.TrimSpace(meta.ChatTemplate) == "" {
			// Nothing on stdout, so that a script saving the template
			// gets no stray line; the exit status says there is none.
			return fmt.Errorf("%s has no chat template in the file (woolly chat and the server's chat routes use ChatML for it; --chat-template picks another)", pos[0])
		}
		fmt.Fprintln(stdout, meta.ChatTemplate)
		return nil
	case *onlyParams:
		for _, n := range repl.ParamNames {
			v, _ := params.Get(n)
			fmt.Fprintf(stdout, "%-18s %s\n", n, v)
		}
		return nil
	}
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	tw := newTable(stdout, "  Model")
	fmt.Fprintf(tw, "    architecture\t%s\n", meta.Architecture)
	fmt.Fprintf(tw, "    parameters\t%s\n", countShort(meta.NParams))
	fmt.Fprintf(tw, "    context length\t%d\n", meta.ContextLength)
	fmt.Fprintf(tw, "    quantization\t%s\n", meta.FileType)
	fmt.Fprintf(tw, "    file\t%s (%s)\n", p, humanize.Bytes(uint64(fi.Size())))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "  Capabilities")
	for _, c := range server.Capabilities(meta) {
		fmt.Fprintf(tw, "    %s\n", c)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "  Parameters (Woolly's defaults; /set parameter changes them in a chat)")
	for _, n := range repl.ParamNames {
		v, _ := params.Get(n)
		fmt.Fprintf(tw, "    %s\t%s\n", n, v)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "  Template")
	if err := tw.Flush(); err != nil {
		return err
	}
	if strings.TrimSpace(meta.ChatTemplate) == "" {
		fmt.Fprintln(stdout, "    (none in the file: chat uses ChatML)")
		return nil
	}
	for _, l := range strings.Split(strings.TrimRight(meta.ChatTemplate, "\n"), "\n") {
		fmt.Fprintf(stdout, "    %s\n", l)
	}
	return nil
}

// countShort writes a parameter count as Ollama does: 292.4K, 1.2B.
func countShort(n int64) string {
	for _, u := range []struct {
		div  float64
		unit string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if float64(n) >= u.div {
			return strconv.FormatFloat(float64(n)/u.div, 'f', 1, 64) + u.unit
		}
	}
	return strconv.FormatInt(n, 10)
}

// serverURL is the base URL of the server a client verb asks: --host (or
// WOOLLY_HOST) as a URL, HOST:PORT or HOST; the port defaults to
// WOOLLY_PORT, else serve's default 8080. A wildcard bind address
// (0.0.0.0, ::) means this machine.
func serverURL(host string) (string, error) {
	if strings.Contains(host, "://") {
		return strings.TrimRight(host, "/"), nil
	}
	port := envOr("WOOLLY_PORT", "8080")
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("WOOLLY_PORT=%q is not a port", port)
	}
	h := host
	if hh, pp, err := net.SplitHostPort(host); err == nil {
		h, port = hh, pp
	}
	switch h {
	case "", "0.0.0.0", "::", "[::]":
		h = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(strings.Trim(h, "[]"), port), nil
}

// clientFlags are the flags of the verbs that ask a running server.
type clientFlags struct{ host, apiKey *string }

func addClientFlags(fs *flag.FlagSet) clientFlags {
	return clientFlags{
		host:   fs.String("host", envOr("WOOLLY_HOST", ""), "the server: URL, HOST:PORT or HOST (port: WOOLLY_PORT, else 8080; env WOOLLY_HOST)"),
		apiKey: fs.String("api-key", envOr("WOOLLY_API_KEY", ""), "the server's API key (env WOOLLY_API_KEY)"),
	}
}

// call sends one request to the server and returns its body; a status
// other than 200 is an error with the server's words.
func (c clientFlags) call(method, path, body string) ([]byte, error) {
	base, err := serverURL(*c.host)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("--host %q: %v", *c.host, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if *c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+*c.apiKey)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("no answer from a woolly server at %s (start one with 'woolly serve', or name it with --host or WOOLLY_HOST): %v", base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s%s: %s: %s", base, path, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

func runPs(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ps", stderr, "usage: woolly ps", "Lists the models a running 'woolly serve' has loaded.")
	c := addClientFlags(fs)
	if _, err := positional(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	body, err := c.call("GET", "/api/ps", "")
	if err != nil {
		return err
	}
	var ps struct {
		Models []struct {
			Name      string    `json:"name"`
			Size      int64     `json:"size"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &ps); err != nil {
		return fmt.Errorf("/api/ps: not the answer of a woolly server: %v", err)
	}
	tw := newTable(stdout, "NAME\tSIZE\tPROCESSOR\tUNTIL\t")
	for _, m := range ps.Models {
		until := humanize.Time(m.ExpiresAt)
		if time.Until(m.ExpiresAt) > 50*365*24*time.Hour {
			until = "Forever"
		}
		fmt.Fprintf(tw, "%s\t%s\t100%% CPU\t%s\t\n", m.Name, humanize.Bytes(uint64(m.Size)), until)
	}
	return tw.Flush()
}

func runStop(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("stop", stderr, "usage: woolly stop NAME", "Unloads a model from a running 'woolly serve' (Ollama's keep_alive 0).")
	c := addClientFlags(fs)
	pos, err := positional(fs, args, 1, 1, "one model name")
	if err != nil {
		return err
	}
	req, err := json.Marshal(map[string]any{"model": pos[0], "keep_alive": 0})
	if err != nil {
		return err
	}
	_, err = c.call("POST", "/api/generate", string(req))
	return err
}

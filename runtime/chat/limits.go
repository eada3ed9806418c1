package chat

// Bounds on rendering a Jinja template. A chat template comes from the model
// file, so a hostile or broken one must cost an error, not a hang, an
// exhausted memory or a crashed process. Real templates (Llama 3, Qwen3,
// Gemma, Phi-3, Mistral, Granite, ...) stay far inside every bound.
//
//   - Recursion is refused before anything runs: a macro that can reach
//     itself (directly, through other macros, or through a variable or
//     namespace holding a macro) and `{% for ... recursive %}` loops. Go
//     cannot recover from the stack overflow unbounded recursion ends in.
//   - range() hands out at most rangeBudget numbers per render, summed over
//     every call, so neither a huge range nor nested loops over ranges can
//     spin; each call's list is built at once (no goroutine left behind).
//   - The output is capped (outputCap plus 8 bytes per byte of messages).
//   - The values a render builds without writing them out (a string
//     doubled in a {% set %} inside a loop, 'x' * 10**10), what filters and
//     string methods make, and the items its loops take are metered
//     (meter.go).
//   - A render that still runs after renderDeadline returns an error; the
//     engine cannot be stopped mid-expression, so it finishes in the
//     background, bounded by the limits above.

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	ctrl "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
)

const (
	rangeBudget    = 100_000         // numbers range() may produce in one render
	outputCap      = 1 << 20         // bytes of output beyond 8 per byte of messages
	renderDeadline = 2 * time.Second // one render's wall-clock limit
)

// errLimit marks the errors of these bounds.
type errLimit struct{ msg string }

func (e *errLimit) Error() string { return "chat template: " + e.msg }

// boundedRange is range() with a per-render budget shared by its calls.
func boundedRange(used *atomic.Int64) func(*exec.Evaluator, *exec.VarArgs) ([]int, error) {
	return func(_ *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
		start, stop, step := 0, 0, 1
		for _, a := range params.Args {
			if !a.IsInteger() {
				return nil, errors.New("range: arguments must be integers")
			}
		}
		switch len(params.Args) {
		case 1:
			stop = params.Args[0].Integer()
		case 2:
			start, stop = params.Args[0].Integer(), params.Args[1].Integer()
		case 3:
			start, stop, step = params.Args[0].Integer(), params.Args[1].Integer(), params.Args[2].Integer()
		default:
			return nil, errors.New("range: want [start, ]stop[, step]")
		}
		if step == 0 {
			return nil, errors.New("range: step is 0")
		}
		n := 0
		if step > 0 && stop > start {
			n = (stop - start + step - 1) / step
		} else if step < 0 && start > stop {
			n = (start - stop - step - 1) / -step
		}
		if n < 0 || used.Add(int64(n)) > rangeBudget {
			return nil, &errLimit{fmt.Sprintf("range() asked for more than %d numbers in one render", rangeBudget)}
		}
		out := make([]int, n)
		for i := range out {
			out[i] = start + i*step
		}
		return out, nil
	}
}

// rendersRunning counts the renders whose goroutine has not ended, those
// past their deadline included (the tests check that these end).
var rendersRunning atomic.Int64

// cappedWriter fails once more than max bytes are written.
type cappedWriter struct {
	b   strings.Builder
	max int
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.max {
		return 0, &errLimit{fmt.Sprintf("the output passed %d bytes", w.max)}
	}
	return w.b.Write(p)
}

// execute renders tpl with ctx under the output cap and the deadline.
func execute(tpl *exec.Template, ctx *exec.Context, maxOut int) (string, error) {
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	rendersRunning.Add(1)
	go func() {
		defer rendersRunning.Add(-1)
		var r result
		defer func() { // the engine must never take the server down
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("chat template: engine failure: %v", p)}
			}
			done <- r
		}()
		w := &cappedWriter{max: maxOut}
		r.err = tpl.Execute(io.Writer(w), ctx)
		r.out = w.b.String()
	}()
	timer := time.NewTimer(renderDeadline)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.out, r.err
	case <-timer.C:
		return "", &errLimit{fmt.Sprintf("rendering took longer than %v", renderDeadline)}
	}
}

// checkRecursion refuses templates that can recurse: recursive for-loops,
// and macros that can reach themselves. A name counts as a macro when it is
// one, or when a {% set %} anywhere gives it a value that mentions one
// (aliases, namespaces) other than as the callee of a call (a macro call's
// value is its rendered text, which cannot be called); every mention of
// such a name inside a macro's body is an edge of the call graph.
func checkRecursion(root *nodes.Template) error {
	var macros []*nodes.Macro
	setExprs := map[string][]reflect.Value{} // assigned name -> the values it is given
	recursiveFor, usesSelf := false, false
	walkAST(reflect.ValueOf(root), map[uintptr]bool{}, func(v reflect.Value) {
		switch n := v.Interface().(type) {
		case *nodes.Name:
			usesSelf = usesSelf || n.Name != nil && n.Name.Val == "self"
		case *nodes.Macro:
			macros = append(macros, n)
		case *ctrl.ForControlStructure:
			if n.Recursive {
				recursiveFor = true
			}
		case *ctrl.SetControlStructure:
			sv := reflect.ValueOf(n).Elem()
			if target := baseName(sv.FieldByName("target")); target != "" {
				setExprs[target] = append(setExprs[target], sv.FieldByName("expression"))
			}
		}
	})
	if recursiveFor {
		return &errLimit{"recursive for-loops are not supported (unbounded recursion)"}
	}
	if usesSelf { // self.BLOCK() renders a block, which may call itself
		return &errLimit{"self (blocks called as functions) is not supported"}
	}
	// macroish[name] = the macros a name may hold.
	macroish := map[string]map[string]bool{}
	for _, m := range macros {
		macroish[m.Name] = map[string]bool{m.Name: true}
	}
	sets := map[string][]string{} // assigned name -> names its values mention (macro callees left out)
	for target, vals := range setExprs {
		for _, v := range vals {
			sets[target] = append(sets[target], valueNames(v, macroish)...)
		}
	}
	for changed := true; changed; {
		changed = false
		for target, refs := range sets {
			for _, r := range refs {
				for m := range macroish[r] {
					if macroish[target] == nil {
						macroish[target] = map[string]bool{}
					}
					if !macroish[target][m] {
						macroish[target][m], changed = true, true
					}
				}
			}
		}
	}
	edges := map[string]map[string]bool{}
	for _, m := range macros {
		if edges[m.Name] == nil {
			edges[m.Name] = map[string]bool{}
		}
		for _, name := range namesIn(reflect.ValueOf(m.Wrapper)) {
			for callee := range macroish[name] {
				edges[m.Name][callee] = true
			}
		}
	}
	// A cycle in edges is recursion.
	state := map[string]int{} // 1: on the path, 2: done
	var visit func(string) string
	visit = func(m string) string {
		switch state[m] {
		case 1:
			return m
		case 2:
			return ""
		}
		state[m] = 1
		callees := slices.Sorted(maps.Keys(edges[m]))
		for _, c := range callees {
			if r := visit(c); r != "" {
				return r
			}
		}
		state[m] = 2
		return ""
	}
	names := slices.Sorted(maps.Keys(edges))
	for _, m := range names {
		if r := visit(m); r != "" {
			return &errLimit{fmt.Sprintf("macro %q can call itself (recursion is not supported)", r)}
		}
	}
	return nil
}

// valueNames lists the names an expression mentions, except a macro's name
// in the callee position of a call: the call's value is text.
func valueNames(v reflect.Value, macros map[string]map[string]bool) []string {
	seen := map[uintptr]bool{}
	walkAST(v, map[uintptr]bool{}, func(v reflect.Value) {
		if c, ok := v.Interface().(*nodes.Call); ok {
			if n, ok := c.Func.(*nodes.Name); ok && n.Name != nil && macros[n.Name.Val] != nil {
				seen[reflect.ValueOf(n).Pointer()] = true
			}
		}
	})
	var out []string
	walkAST(v, seen, func(v reflect.Value) {
		if n, ok := v.Interface().(*nodes.Name); ok && n.Name != nil {
			out = append(out, n.Name.Val)
		}
	})
	return out
}

// namesIn lists the variable names mentioned in an AST subtree.
func namesIn(v reflect.Value) []string {
	var out []string
	walkAST(v, map[uintptr]bool{}, func(v reflect.Value) {
		if n, ok := v.Interface().(*nodes.Name); ok && n.Name != nil {
			out = append(out, n.Name.Val)
		}
	})
	return out
}

// baseName is the variable a {% set %} target assigns: x for x, ns for
// ns.attr or ns[k].
func baseName(v reflect.Value) string {
	names := namesIn(v)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

var nodeType = reflect.TypeOf((*nodes.Node)(nil)).Elem()

// walkAST calls f on every pointer reachable from v whose type is an AST
// node (exported or not: gonja keeps some fields unexported), once each.
func walkAST(v reflect.Value, seen map[uintptr]bool, f func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			walkAST(v.Elem(), seen, f)
		}
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		if v.Type().Implements(nodeType) && v.CanInterface() {
			f(v)
		} else if v.Type().Implements(nodeType) {
			f(reflect.NewAt(v.Type().Elem(), v.UnsafePointer()))
		}
		walkAST(v.Elem(), seen, f)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			walkAST(v.Field(i), seen, f)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			walkAST(v.Index(i), seen, f)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walkAST(it.Value(), seen, f)
		}
	}
}

// templateName is the name the engine knows a chat template by.
const templateName = "/chat_template"

// onceLoader is the engine's loader of one chat template: it reads the
// template once, for compiling it, and nothing else, ever. A template that
// includes, imports or extends a template (itself is the only one there
// is: `{% extends '/chat_template' %}` recursed in the parser until the
// process died of a stack overflow; `{% include %}` of itself recursed in
// the background of a timed-out render) gets an error instead.
type onceLoader struct {
	src  string
	read atomic.Bool
}

var errNoInclude = &errLimit{"{% include %}, {% import %} and {% extends %} are not supported"}

func (l *onceLoader) Read(path string) (io.Reader, error) {
	if path != templateName || l.read.Swap(true) {
		return nil, errNoInclude
	}
	return strings.NewReader(l.src), nil
}

func (l *onceLoader) Resolve(path string) (string, error) { return path, nil }

func (l *onceLoader) Inherit(string) (loaders.Loader, error) { return l, nil }

package chat

// The memory and work a render's values may take (see limits.go). The
// engine has no hook on its operators, so compile rewrites the template's
// tree: the operands of +, ~ and * pass through two functions that see
// both before the engine combines them; every printed expression passes
// through one that sizes it; every for-loop's sequence through one that
// counts its items. Filters and string methods are wrapped. So:
//
//   - A value an operator or a filter makes is at most valueCap bytes
//     (twice the output cap: nothing larger could be written out), and the
//     values a render makes together at most budget bytes; 'x' * 10**10 or
//     a string doubled in a loop stops at the bound, before the allocation.
//   - A printed value is sized (with an early stop) before the engine turns
//     it into text: lists that hold themselves over and over cannot print
//     as 2^40 bytes.
//   - Arguments of calls (functions, macros, methods) and of filters are
//     sized too: they may be read as text.
//   - The loops of a render take at most loopBudget items in all, so a
//     render left running after its deadline ends soon.
//   - Methods see no render state: a method call's receiver is charged
//     (its length, or 8 bytes an element) before the call, and a string
//     method makes at most 1 MiB plus 8 times its string (64 MiB at most),
//     so a loop of s.replace(...) on a big string stops at the budget.
//     lipsum() is refused.

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	ctrl "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

const (
	valueBudgetFactor = 64       // a render's values together: this many times its output cap
	loopBudget        = 200_000  // for-loop items in one render (gonja takes 5-10 µs an item)
	methodCap         = 64 << 20 // bytes one string method may make, at most
	methodBase        = 1 << 20  // bytes one string method may make beyond 8 times its string
)

// Names the rewritten tree calls; compile refuses a template that
// mentions the prefix, so that none can reach or shadow them.
const (
	meterVar = "__woolly_meter"
	lhsFunc  = "__woolly_lhs"
	rhsFunc  = "__woolly_rhs"
	outFunc  = "__woolly_out"
	iterFunc = "__woolly_iter"
	argFunc  = "__woolly_arg"

	litRightFunc = "__woolly_litr"
	recvFunc     = "__woolly_recv"
)

// meter is one render's account; only the render's goroutine uses it.
type meter struct {
	valueCap int64
	budget   int64
	used     int64
	items    int64
	pending  []operand // left operands waiting for their right one
}

type operand struct {
	id int
	v  *exec.Value
}

func newMeter(maxOut int) *meter {
	return &meter{valueCap: 2 * int64(maxOut), budget: valueBudgetFactor * int64(maxOut)}
}

// charge accounts for a value of n bytes that what is about to make.
func (m *meter) charge(n int64, what string) error {
	if n > m.valueCap {
		return &errLimit{fmt.Sprintf("%s would make a value of more than %d bytes", what, m.valueCap)}
	}
	m.used += n
	if m.used > m.budget {
		return &errLimit{fmt.Sprintf("the values the template made passed %d bytes", m.budget)}
	}
	return nil
}

// meterOf finds the render's meter; a render without one (none is made
// that way) gets a fresh one of the smallest output cap.
func meterOf(e *exec.Evaluator) *meter {
	if e != nil && e.Environment != nil && e.Environment.Context != nil {
		if v, ok := e.Environment.Context.Get(meterVar); ok {
			if m, ok := v.(*meter); ok {
				return m
			}
		}
	}
	return newMeter(outputCap)
}

var (
	valuePtrType     = reflect.TypeOf((*exec.Value)(nil))
	reflectValueType = reflect.TypeOf(reflect.Value{})
)

// sizeOf estimates the bytes v takes written out (strings by their length,
// 8 for every other scalar and for each element, key and field), walking
// shared and cyclic structure as often as it is reached: stopping once
// past limit, so the walk costs O(limit) whatever the structure.
func sizeOf(v *exec.Value, limit int64) int64 {
	if v == nil {
		return 0
	}
	var n int64
	stack := []reflect.Value{v.Val}
	for len(stack) > 0 && n <= limit {
		rv := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for rv.IsValid() && (rv.Kind() == reflect.Interface || rv.Kind() == reflect.Pointer) && !rv.IsNil() {
			if rv.Type() == valuePtrType { // the value it wraps (read past reflection's read-only flag)
				rv = (*exec.Value)(rv.UnsafePointer()).Val
				continue
			}
			rv = rv.Elem()
		}
		n += 8
		if !rv.IsValid() {
			continue
		}
		switch rv.Kind() {
		case reflect.String:
			n += int64(rv.Len())
		case reflect.Slice, reflect.Array:
			if rv.Type().Elem().Kind() == reflect.Uint8 {
				n += int64(rv.Len())
				continue
			}
			for i := 0; i < rv.Len() && n <= limit; i++ {
				stack = append(stack, rv.Index(i))
				n += 8
			}
		case reflect.Map:
			it := rv.MapRange()
			for it.Next() && n <= limit {
				stack = append(stack, it.Key(), it.Value())
			}
		case reflect.Struct:
			if rv.Type() == reflectValueType { // an exec.Value held by value: its Val
				if rv.CanInterface() {
					stack = append(stack, rv.Interface().(reflect.Value))
				}
				continue // never into reflection's own type data
			}
			for i := 0; i < rv.NumField(); i++ {
				stack = append(stack, rv.Field(i))
			}
		}
	}
	return n
}

// lhs passes a left operand through, keeping it for rhs.
func lhs(e *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
	if len(args.Args) != 2 {
		return nil, errors.New("internal: lhs wants 2 arguments")
	}
	m := meterOf(e)
	m.pending = append(m.pending, operand{args.Args[0].Integer(), args.Args[1]})
	return args.Args[1], nil
}

// rhs passes a right operand through once the result of combining it with
// its left operand fits the meter. args: id, operator, operand, and the
// left operand itself when it is a literal (the tree then has no lhs).
func rhs(e *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
	if len(args.Args) != 3 && len(args.Args) != 4 {
		return nil, errors.New("internal: rhs wants 3 or 4 arguments")
	}
	m := meterOf(e)
	id, op, r := args.Args[0].Integer(), args.Args[1].String(), args.Args[2]
	var l *exec.Value
	if len(args.Args) == 4 {
		l = args.Args[3]
	} else {
		for i := len(m.pending) - 1; i >= 0; i-- {
			if m.pending[i].id == id {
				l = m.pending[i].v
				m.pending = m.pending[:i]
				break
			}
		}
	}
	if l == nil {
		return r, nil
	}
	return r, m.combine(op, l, r)
}

// litRight passes a left operand through once the result of combining it
// with its literal right operand fits the meter. args: operator, operand,
// the literal.
func litRight(e *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
	if len(args.Args) != 3 {
		return nil, errors.New("internal: litRight wants 3 arguments")
	}
	l := args.Args[1]
	return l, meterOf(e).combine(args.Args[0].String(), l, args.Args[2])
}

// combine charges the value the engine makes of l op r, or checks that a
// comparison's sides are small enough to walk.
func (m *meter) combine(op string, l, r *exec.Value) error {
	var n int64
	switch op {
	case "*": // the engine repeats a string left operand, else multiplies numbers
		if !l.IsString() || r.IsFloat() {
			return nil
		}
		k := int64(r.Integer())
		if k < 0 {
			return fmt.Errorf("chat template: a string repeated %d times", k)
		}
		if ln := int64(len(l.String())); ln > 0 && k > m.valueCap/ln {
			n = m.valueCap + 1
		} else {
			n = ln * k
		}
	case "+": // lists concatenate, then floats add, then strings concatenate
		if !l.IsList() && (l.IsFloat() || r.IsFloat() || !(l.IsString() || r.IsString())) {
			return nil
		}
		n = sizeOf(l, m.valueCap) + sizeOf(r, m.valueCap)
	case "~": // joins both as text
		n = sizeOf(l, m.valueCap) + sizeOf(r, m.valueCap)
	default: // comparisons walk both, and make nothing
		if sizeOf(l, m.valueCap) > m.valueCap || sizeOf(r, m.valueCap) > m.valueCap {
			return &errLimit{fmt.Sprintf("the operator %s compares a value of more than %d bytes", op, m.valueCap)}
		}
		return nil
	}
	return m.charge(n, "the operator "+op)
}

// sizedPass is a function of the rewritten tree that passes its one
// argument through once its size is at most the value cap (name is the
// function's, what says what the value is in the error).
func sizedPass(name, what string) func(*exec.Evaluator, *exec.VarArgs) (*exec.Value, error) {
	return func(e *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
		if len(args.Args) != 1 {
			return nil, fmt.Errorf("internal: %s wants 1 argument", name)
		}
		m := meterOf(e)
		if sizeOf(args.Args[0], m.valueCap) > m.valueCap {
			return nil, &errLimit{fmt.Sprintf("%s is more than %d bytes", what, m.valueCap)}
		}
		return args.Args[0], nil
	}
}

// printed passes a printed value through once it is small enough to write.
var printed = sizedPass("out", "a printed value")

// argument passes a call's argument through once it is small enough: a
// function (raise_exception, a macro, a method) may read it as text.
var argument = sizedPass("arg", "an argument of a call")

// iterated passes a loop's sequence through, counting its items.
func iterated(e *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
	if len(args.Args) != 1 {
		return nil, errors.New("internal: iter wants 1 argument")
	}
	m := meterOf(e)
	v := args.Args[0]
	n := int64(0)
	switch {
	case v.IsString():
		n = int64(len(v.String()))
	case v.IsList() || v.IsDict():
		n = int64(v.Len())
	}
	if m.items += n; m.items > loopBudget {
		return nil, &errLimit{fmt.Sprintf("the loops took more than %d items in one render", loopBudget)}
	}
	return v, nil
}

// meteredGlobals are the functions the rewritten tree calls, and lipsum
// refused (its paragraph count and lengths are unbounded).
var meteredGlobals = map[string]any{
	lhsFunc: lhs, rhsFunc: rhs, outFunc: printed, iterFunc: iterated, argFunc: argument, litRightFunc: litRight, recvFunc: receiver,
	"lipsum": func(...any) (string, error) { return "", errors.New("chat template: lipsum() is not supported") },
}

// comparingTests are the tests (x is NAME y) that compare values.
var comparingTests = map[string]bool{"eq": true, "equalto": true, "==": true, "ne": true, "!=": true, "in": true,
	"sameas": true, "ge": true, ">=": true, "gt": true, "greaterthan": true, ">": true, "le": true, "<=": true,
	"lt": true, "lessthan": true, "<": true, "lower": true, "upper": true}

// eqTests are the comparing tests that only test equality.
var eqTests = map[string]bool{"eq": true, "equalto": true, "==": true, "ne": true, "!=": true, "sameas": true}

// scalarLiteral reports whether x is a literal string, number, boolean or
// none: equality with one costs no more than the other side's top level
// (gonja compares a list with a scalar as unequal at once).
func scalarLiteral(x nodes.Expression) bool {
	switch x.(type) {
	case *nodes.String, *nodes.Integer, *nodes.Float, *nodes.Bool, *nodes.None:
		return true
	}
	return false
}

// literal reports whether x is a literal string or number: evaluating it
// twice costs nothing.
func literal(x nodes.Expression) bool {
	switch x.(type) {
	case *nodes.String, *nodes.Integer, *nodes.Float:
		return true
	}
	return false
}

// posOf is x's position, or nil: gonja's parser can leave a malformed
// node whose Position dereferences nil ({% for a in in %}).
func posOf(x nodes.Node) (pos *tokens.Token) {
	defer func() {
		if recover() != nil {
			pos = nil
		}
	}()
	if x == nil {
		return nil
	}
	return x.Position()
}

// call makes the node of a call of the function name on args, at pos.
func call(name string, pos *tokens.Token, args ...nodes.Expression) *nodes.Call {
	if pos == nil {
		pos = &tokens.Token{}
	}
	tok := *pos
	tok.Type, tok.Val = tokens.Name, name
	return &nodes.Call{Location: &tok, Func: &nodes.Name{Name: &tok}, Args: args}
}

func intNode(i int, pos *tokens.Token) *nodes.Integer {
	tok := tokens.Token{Type: tokens.Integer, Val: fmt.Sprint(i)}
	if pos != nil {
		tok.Line, tok.Col, tok.Pos = pos.Line, pos.Col, pos.Pos
	}
	return &nodes.Integer{Location: &tok, Val: i}
}

func strNode(s string, pos *tokens.Token) *nodes.String {
	tok := tokens.Token{Type: tokens.String, Val: s}
	if pos != nil {
		tok.Line, tok.Col, tok.Pos = pos.Line, pos.Col, pos.Pos
	}
	return &nodes.String{Location: &tok, Val: s}
}

// meterTree rewrites a compiled template so that its operators, printed
// values and loops go through the meter (see the top of the file). The
// comparisons are sized too: lists that hold themselves over and over
// compare in exponential time.
func meterTree(root *nodes.Template) {
	id := 0
	walkAST(reflect.ValueOf(root), map[uintptr]bool{}, func(v reflect.Value) {
		switch n := v.Interface().(type) {
		case *nodes.BinaryExpression:
			if n.Operator == nil || n.Operator.Token == nil || n.Left == nil || n.Right == nil {
				return
			}
			op := n.Operator.Token
			switch op.Type {
			case tokens.Equals, tokens.Ne:
				if scalarLiteral(n.Left) || scalarLiteral(n.Right) {
					return // a list or dict never equals a scalar: compared at once
				}
			case tokens.Addition, tokens.Multiply, tokens.Tilde, tokens.In,
				tokens.LowerThan, tokens.LowerThanOrEqual, tokens.GreaterThan, tokens.GreaterThanOrEqual:
			default:
				return
			}
			pos := posOf(n.Left)
			switch {
			case literal(n.Left): // one call, given the literal
				n.Right = call(rhsFunc, pos, intNode(0, pos), strNode(op.Val, pos), n.Right, n.Left)
			case literal(n.Right):
				n.Left = call(litRightFunc, pos, strNode(op.Val, pos), n.Left, n.Right)
			default:
				id++
				n.Left = call(lhsFunc, pos, intNode(id, pos), n.Left)
				n.Right = call(rhsFunc, pos, intNode(id, pos), strNode(op.Val, pos), n.Right)
			}
		case *nodes.Output:
			if n.Expression != nil && !scalarLiteral(n.Expression) {
				n.Expression = call(outFunc, posOf(n.Expression), n.Expression)
			}
			if n.Alternative != nil && !scalarLiteral(n.Alternative) {
				n.Alternative = call(outFunc, posOf(n.Alternative), n.Alternative)
			}
		case *nodes.Call:
			if f, ok := n.Func.(*nodes.Name); ok && f.Name != nil && strings.HasPrefix(f.Name.Val, "__woolly_") {
				return // the meter's own
			}
			if ga, ok := n.Func.(*nodes.GetAttribute); ok { // a method call's receiver
				if x, ok := ga.Node.(nodes.Expression); ok && x != nil {
					ga.Node = call(recvFunc, posOf(x), x)
				}
				if x, ok := n.Parent.(nodes.Expression); ok && x != nil {
					n.Parent = call(recvFunc, posOf(x), x)
				}
			}
			for i, a := range n.Args {
				if a != nil && !scalarLiteral(a) {
					n.Args[i] = call(argFunc, posOf(a), a)
				}
			}
			for k, a := range n.Kwargs {
				if a != nil && !scalarLiteral(a) {
					n.Kwargs[k] = call(argFunc, posOf(a), a)
				}
			}
		case *nodes.TestExpression: // the comparing tests walk both sides
			if n.Test == nil || !comparingTests[n.Test.Name] {
				return
			}
			if eqTests[n.Test.Name] && len(n.Test.Args) == 1 && (scalarLiteral(n.Expression) || scalarLiteral(n.Test.Args[0])) {
				return
			}
			if n.Expression != nil {
				n.Expression = call(argFunc, posOf(n.Expression), n.Expression)
			}
			for i, a := range n.Test.Args {
				if a != nil && !scalarLiteral(a) {
					n.Test.Args[i] = call(argFunc, posOf(a), a)
				}
			}
		case *ctrl.ForControlStructure:
			if n.ObjectEvaluator != nil {
				n.ObjectEvaluator = call(iterFunc, posOf(n.ObjectEvaluator), n.ObjectEvaluator)
			}
		}
	})
}

// argsOver reports whether an argument of p is more than limit bytes.
func argsOver(p *exec.VarArgs, limit int64) bool {
	for _, a := range p.Args {
		if sizeOf(a, limit) > limit {
			return true
		}
	}
	for _, a := range p.KwArgs {
		if sizeOf(a, limit) > limit {
			return true
		}
	}
	return false
}

// receiver passes a method call's receiver through, charging its top
// level: methods cannot see the meter, so their calls are counted here.
func receiver(e *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
	if len(args.Args) != 1 {
		return nil, errors.New("internal: recv wants 1 argument")
	}
	return args.Args[0], meterOf(e).charge(shallowSize(args.Args[0]), "a method call")
}

// intArg is the integer argument at position i or keyword name, def when
// absent or not an integer.
func intArg(p *exec.VarArgs, i int, name string, def int64) int64 {
	var v *exec.Value
	if i < len(p.Args) {
		v = p.Args[i]
	} else if kv, ok := p.KwArgs[name]; ok {
		v = kv
	}
	if v == nil || !v.IsInteger() {
		return def
	}
	return int64(v.Integer())
}

// strArg is the string argument at position i or keyword name.
func strArg(p *exec.VarArgs, i int, name, def string) string {
	var v *exec.Value
	if i < len(p.Args) {
		v = p.Args[i]
	} else if kv, ok := p.KwArgs[name]; ok {
		v = kv
	}
	if v == nil {
		return def
	}
	return v.String()
}

// satMul is a*b, or limit+1 when that passes limit (a, b >= 0).
func satMul(a, b, limit int64) int64 {
	if a > 0 && b > limit/a {
		return limit + 1
	}
	return a * b
}

// digitSum adds up the numbers written in s (format widths and
// precisions: a bound on what they pad to), saturating past limit.
func digitSum(s string, limit int64) int64 {
	var sum, cur int64
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			cur = min(cur*10+int64(s[i]-'0'), limit+1)
			continue
		}
		sum = min(sum+cur, limit+1)
		cur = 0
	}
	return sum
}

// replaceCost bounds the length of s with old replaced by repl (at most
// count times when count >= 0).
func replaceCost(s, old, repl string, count, limit int64) int64 {
	occ := int64(0)
	if old == "" {
		occ = int64(utf8.RuneCountInString(s)) + 1
	} else {
		occ = int64(strings.Count(s, old))
	}
	if count >= 0 {
		occ = min(occ, count)
	}
	return min(int64(len(s))+satMul(occ, int64(len(repl)), limit), limit+1)
}

// preCost bounds the size of what the filter name makes of in, for the
// filters whose result can be many times their input (the others are
// charged after, by their result's size; every filter's input is sized
// before it runs).
func preCost(name string, in *exec.Value, p *exec.VarArgs, limit int64) int64 {
	size := func(v *exec.Value) int64 { return sizeOf(v, limit) }
	switch name {
	case "center":
		return max(size(in), intArg(p, 0, "width", 80))
	case "indent":
		lines := int64(strings.Count(in.String(), "\n") + 1)
		w := intArg(p, 0, "width", 4)
		if len(p.Args) > 0 && p.Args[0].IsString() { // a string width is the indent itself
			w = int64(len(p.Args[0].String()))
		} else if v, ok := p.KwArgs["width"]; ok && v.IsString() {
			w = int64(len(v.String()))
		}
		return min(size(in)+satMul(lines, max(w, 0), limit), limit+1)
	case "format":
		n := size(in) + digitSum(in.String(), limit)
		for _, a := range p.Args {
			n += size(a)
		}
		return min(n, limit+1)
	case "replace":
		return replaceCost(in.String(), strArg(p, 0, "old", ""), strArg(p, 1, "new", ""), intArg(p, 2, "count", -1), limit)
	case "batch":
		return min(size(in)+satMul(max(intArg(p, 0, "linecount", 0), 0), 16, limit), limit+1)
	case "slice": // as many lists as asked for, empty ones included
		return min(size(in)+satMul(max(intArg(p, 0, "slices", 0), 0), 24, limit), limit+1)
	case "join":
		return min(size(in)+satMul(int64(in.Len()), int64(len(strArg(p, 0, "d", ""))), limit), limit+1)
	case "wordwrap":
		s := int64(len(in.String()))
		w := max(intArg(p, 0, "width", 79), 1)
		return min(s+satMul(s/w+1, int64(len(strArg(p, 2, "wrapstring", "\n"))), limit), limit+1)
	case "tojson":
		return min(satMul(size(in), 2+max(intArg(p, 0, "indent", 0), 0), limit), limit+1)
	}
	return 0
}

// meteredFilters wraps every filter of fs: refused before it runs when
// preCost passes the value cap, its result charged after.
func meteredFilters(fs *exec.FilterSet) *exec.FilterSet {
	out := exec.NewFilterSet(map[string]exec.FilterFunction{})
	for _, name := range filterNames(fs) {
		f, _ := fs.Get(name)
		_ = out.Register(name, meteredFilter(name, f))
	}
	return out
}

// shallowFilters read no more of their input than its top level (its
// length, an element, a copy of the list of its elements): their input is
// not sized (messages|length runs once per message in real templates) and
// their result is charged by its top level.
var shallowFilters = map[string]bool{"length": true, "count": true, "first": true, "last": true, "default": true,
	"d": true, "attr": true, "safe": true, "int": true, "float": true, "abs": true, "round": true, "random": true,
	"reverse": true, "list": true, "items": true, "batch": true, "slice": true}

// shallowSize is 8 bytes for v and each of its top-level elements, and a
// string's length.
func shallowSize(v *exec.Value) int64 {
	switch {
	case v == nil:
		return 8
	case v.IsString():
		return 8 + int64(len(v.String()))
	case v.IsList() || v.IsDict():
		return 8 + 8*int64(v.Len())
	}
	return 8
}

func meteredFilter(name string, f exec.FilterFunction) exec.FilterFunction {
	if shallowFilters[name] {
		return func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
			m := meterOf(e)
			if argsOver(p, m.valueCap) || preCost(name, in, p, m.valueCap) > m.valueCap {
				return exec.AsValue(&errLimit{fmt.Sprintf("the filter %s would make a value of more than %d bytes", name, m.valueCap)})
			}
			out := f(e, in, p)
			if out == nil || out.IsError() {
				return out
			}
			if err := m.charge(shallowSize(out), "the filter "+name); err != nil {
				return exec.AsValue(err)
			}
			return out
		}
	}
	return func(e *exec.Evaluator, in *exec.Value, p *exec.VarArgs) *exec.Value {
		m := meterOf(e)
		// Sized first: preCost reads the input and arguments as text.
		if sizeOf(in, m.valueCap) > m.valueCap || argsOver(p, m.valueCap) || preCost(name, in, p, m.valueCap) > m.valueCap {
			return exec.AsValue(&errLimit{fmt.Sprintf("the filter %s would make a value of more than %d bytes", name, m.valueCap)})
		}
		out := f(e, in, p)
		if out == nil || out.IsError() {
			return out
		}
		if err := m.charge(sizeOf(out, m.valueCap), "the filter "+name); err != nil {
			return exec.AsValue(err)
		}
		return out
	}
}

// filterNames lists the filters of fs (its map is unexported: read by
// reflection, which may read what it cannot set).
func filterNames(fs *exec.FilterSet) []string {
	var names []string
	m := reflect.ValueOf(fs).Elem().FieldByName("filters")
	for _, k := range m.MapKeys() {
		names = append(names, k.String())
	}
	return names
}

// meteredMethods is gonja's methods with the string ones bounded.
func meteredMethods(ms exec.Methods) exec.Methods {
	str := map[string]exec.Method[string]{}
	m := reflect.ValueOf(ms.Str).Elem().FieldByName("methods")
	for _, k := range m.MapKeys() {
		name := k.String()
		f, _ := ms.Str.Get(name)
		str[name] = meteredMethod(name, f)
	}
	ms.Str = exec.NewMethodSet(str)
	return ms
}

func meteredMethod(name string, f exec.Method[string]) exec.Method[string] {
	return func(self string, sv *exec.Value, p *exec.VarArgs) (any, error) {
		limit := min(int64(methodCap), methodBase+8*int64(len(self)))
		if argsOver(p, limit) {
			return nil, &errLimit{fmt.Sprintf("an argument of the method %s is more than %d bytes", name, limit)}
		}
		var n int64
		switch name {
		case "center", "ljust", "rjust", "zfill":
			n = max(int64(len(self)), intArg(p, 0, "width", 0))
		case "expandtabs":
			n = int64(len(self)) + satMul(int64(strings.Count(self, "\t")), max(intArg(p, 0, "tabsize", 8), 0), limit)
		case "replace":
			n = replaceCost(self, strArg(p, 0, "old", ""), strArg(p, 1, "new", ""), intArg(p, 2, "count", -1), limit)
		case "format", "format_map":
			n = int64(len(self)) + digitSum(self, limit)
			for _, a := range p.Args {
				n += sizeOf(a, limit)
			}
			for _, a := range p.KwArgs {
				n += sizeOf(a, limit)
			}
		case "join":
			if len(p.Args) > 0 {
				n = sizeOf(p.Args[0], limit) + satMul(int64(p.Args[0].Len()), int64(len(self)), limit)
			}
		}
		if n > limit {
			return nil, &errLimit{fmt.Sprintf("the method %s would make a value of more than %d bytes", name, limit)}
		}
		return f(self, sv, p)
	}
}

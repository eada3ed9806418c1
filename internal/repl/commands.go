package repl

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/woolly-llm/woolly/runtime/chat"
)

// State is what the chat's commands read and change: the conversation
// (system message and turns), the parameters and the thinking switch.
type State struct {
	Model  string         // the model's name or path, saved with a conversation
	System string         // "" for none
	Turns  []chat.Message // user and assistant messages, oldest first
	Params Params
	Think  *bool // nil: the template's default

	// Info is what /show info prints (the model's details), Template what
	// /show template prints.
	Info     []string
	Template string
	// DropsSystem, when set, reports whether the chat template leaves a
	// system message out: setting one then prints a warning.
	DropsSystem func(system string) bool
	// NoThinkSwitch: the chat template has no thinking switch
	// (enable_thinking), so think and nothink change nothing: setting them
	// prints a note.
	NoThinkSwitch bool
	// ConversationsDir is where /save and /load keep conversations.
	ConversationsDir string
}

// Messages returns the conversation as the template gets it: the system
// message first, when there is one.
func (s *State) Messages() []chat.Message {
	var m []chat.Message
	if s.System != "" {
		m = append(m, chat.Message{Role: "system", Content: s.System})
	}
	return append(m, s.Turns...)
}

// SetMessages stores the conversation the template was given (with the
// system message first when there is one), as after a turn.
func (s *State) SetMessages(m []chat.Message) {
	if len(m) > 0 && m[0].Role == "system" {
		m = m[1:]
	}
	s.Turns = append(s.Turns[:0:0], m...)
}

// WarnSystem prints a warning to w when the template drops the current
// system message.
func (s *State) WarnSystem(w io.Writer) {
	if s.System != "" && s.DropsSystem != nil && s.DropsSystem(s.System) {
		fmt.Fprintln(w, "warning: this model's chat template leaves the system message out: the model will not see it")
	}
}

// WarnThink prints a note to w when think or nothink is set and the
// template has no thinking switch to apply it to.
func (s *State) WarnThink(w io.Writer) {
	if s.Think != nil && s.NoThinkSwitch {
		fmt.Fprintln(w, "note: this model's chat template has no thinking switch: think and nothink change nothing")
	}
}

// Action is what the REPL does after a command.
type Action int

const (
	Continue Action = iota // read the next input
	Quit                   // end the chat
)

// Help is /? and /help.
const Help = `Commands:
  /set parameter NAME VALUE  change a setting for the next answers (/show parameters lists them)
  /set system TEXT           set the system message (/set system with no text removes it)
  /set think, /set nothink   thinking models: reason before answering, or answer directly
  /show info                 the model's details
  /show parameters           the settings in force
  /show system               the system message
  /show template             the model's chat template
  /clear                     forget the conversation (the system message stays)
  /save NAME                 save the conversation, its system message and settings
  /load NAME                 load a saved conversation
  /bye                       leave (Ctrl-D on an empty line too)
  /?, /help                  this help

Use """ to begin a multi-line message and """ to end it.
Up and Down recall earlier lines; Ctrl-C stops an answer.
`

// IsCommand reports whether an input is a command (it starts with "/")
// rather than a message for the model.
func IsCommand(in string) bool { return strings.HasPrefix(in, "/") }

// Command runs one command line, printing to out (results) and errw
// (problems, warnings). An unknown command gets a pointer to /?; it never
// reaches the model.
func (s *State) Command(line string, out, errw io.Writer) Action {
	cmd, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	switch cmd {
	case "/bye", "/exit":
		return Quit
	case "/?", "/help":
		fmt.Fprint(out, Help)
	case "/set":
		s.set(rest, out, errw)
	case "/show":
		s.show(rest, out, errw)
	case "/clear":
		s.Turns = nil
		fmt.Fprintln(out, "Cleared the conversation.")
	case "/save":
		if rest == "" {
			fmt.Fprintln(errw, "usage: /save NAME")
			break
		}
		p, err := Save(s.ConversationsDir, rest, s.Conversation())
		if err != nil {
			fmt.Fprintf(errw, "/save: %v\n", err)
			break
		}
		fmt.Fprintf(out, "Saved the conversation (%d messages) to %s.\n", len(s.Turns), p)
	case "/load":
		if rest == "" {
			fmt.Fprintln(errw, "usage: /load NAME")
			break
		}
		c, p, err := Load(s.ConversationsDir, rest)
		if err != nil {
			fmt.Fprintf(errw, "/load: %v\n", err)
			break
		}
		s.restore(c, errw)
		fmt.Fprintf(out, "Loaded %s: %d messages.\n", p, len(s.Turns))
		if c.Model != "" && c.Model != s.Model {
			fmt.Fprintf(errw, "note: the conversation was saved with %s; this chat runs %s\n", c.Model, s.Model)
		}
		s.WarnSystem(errw)
	default:
		fmt.Fprintf(errw, "Unknown command %q: /? lists the commands (a message to the model cannot start with /).\n", cmd)
	}
	return Continue
}

func (s *State) set(args string, out, errw io.Writer) {
	what, rest, _ := strings.Cut(args, " ")
	rest = strings.TrimSpace(rest)
	switch what {
	case "parameter":
		name, value, _ := strings.Cut(rest, " ")
		value = strings.TrimSpace(value)
		if name == "" || value == "" {
			fmt.Fprintf(errw, "usage: /set parameter NAME VALUE (NAME: %s)\n", strings.Join(ParamNames, ", "))
			return
		}
		if err := s.Params.Set(name, value); err != nil {
			fmt.Fprintf(errw, "/set parameter: %v\n", err)
			return
		}
		fmt.Fprintf(out, "Set parameter '%s' to '%s'.\n", name, value)
	case "system":
		s.System = rest
		if rest == "" {
			fmt.Fprintln(out, "Removed the system message.")
			return
		}
		fmt.Fprintln(out, "Set the system message.")
		s.WarnSystem(errw)
	case "think", "nothink":
		v := what == "think"
		s.Think = &v
		fmt.Fprintf(out, "Set '%s' mode.\n", what)
		s.WarnThink(errw)
	default:
		fmt.Fprintln(errw, "usage: /set parameter NAME VALUE, /set system TEXT, /set think, /set nothink")
	}
}

func (s *State) show(what string, out, errw io.Writer) {
	switch what {
	case "info":
		for _, l := range s.Info {
			fmt.Fprintln(out, l)
		}
	case "parameters":
		for _, n := range ParamNames {
			v, _ := s.Params.Get(n)
			fmt.Fprintf(out, "%-18s %s\n", n, v)
		}
		if s.Think != nil {
			fmt.Fprintf(out, "%-18s %v\n", "think", *s.Think)
		}
	case "system":
		if s.System == "" {
			fmt.Fprintln(out, "No system message was set.")
			return
		}
		fmt.Fprintln(out, s.System)
	case "template":
		if strings.TrimSpace(s.Template) == "" {
			fmt.Fprintln(out, "The model has no chat template: ChatML is used.")
			return
		}
		fmt.Fprintln(out, s.Template)
	default:
		fmt.Fprintln(errw, "usage: /show info, /show parameters, /show system, /show template")
	}
}

// Conversation is the state /save writes.
func (s *State) Conversation() Conversation {
	params := map[string]string{}
	for _, n := range ParamNames {
		params[n], _ = s.Params.Get(n)
	}
	return Conversation{Model: s.Model, System: s.System, Parameters: params, Think: s.Think,
		Messages: append([]chat.Message{}, s.Turns...)}
}

// restore puts a loaded conversation in place. Parameters that no longer
// parse are reported and left as they were.
func (s *State) restore(c Conversation, errw io.Writer) {
	s.System, s.Turns = c.System, c.Messages
	if c.Think != nil {
		s.Think = c.Think
	}
	names := slices.Sorted(maps.Keys(c.Parameters))
	for _, n := range names {
		if err := s.Params.Set(n, c.Parameters[n]); err != nil {
			fmt.Fprintf(errw, "/load: %v (kept %s as it was)\n", err, n)
		}
	}
}

package repl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/woolly-llm/woolly/internal/models"
	"github.com/woolly-llm/woolly/runtime/chat"
)

// Conversation is a saved chat: the file /save writes and /load reads
// (JSON, one object).
type Conversation struct {
	Model      string            `json:"model,omitempty"`
	System     string            `json:"system,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	Think      *bool             `json:"think,omitempty"`
	Messages   []chat.Message    `json:"messages"`
}

// ConversationsDir is where conversations are saved: ~/.woolly/conversations.
func ConversationsDir() (string, error) {
	h, err := models.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "conversations"), nil
}

// HistoryFile is the REPL's line history, ~/.woolly/history ("" when
// WOOLLY_NOHISTORY is set, or there is no home directory).
func HistoryFile() string {
	if os.Getenv("WOOLLY_NOHISTORY") != "" {
		return ""
	}
	h, err := models.Home()
	if err != nil {
		return ""
	}
	return filepath.Join(h, "history")
}

// maxConversation bounds a conversation file /load reads.
const maxConversation = 64 << 20

// conversationPath checks a conversation's name (a plain name, as model
// names are: no path) and returns its file in dir.
func conversationPath(dir, name string) (string, error) {
	n := strings.TrimSuffix(name, ".json")
	if _, err := models.Canonical(n); err != nil || strings.Contains(n, ":") {
		return "", fmt.Errorf("invalid conversation name %q: a plain name (letters, digits, '-', '_', '.'), not a path", name)
	}
	return filepath.Join(dir, n+".json"), nil
}

// Save writes c as dir/NAME.json (dir is created) and returns the path.
// The file is written beside its destination and renamed into place.
func Save(dir, name string, c Conversation) (string, error) {
	p, err := conversationPath(dir, name)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return p, nil
}

// Load reads dir/NAME.json. A file that is missing, too large, not JSON or
// holds a message of an unknown role is an error naming it.
func Load(dir, name string) (Conversation, string, error) {
	p, err := conversationPath(dir, name)
	if err != nil {
		return Conversation{}, "", err
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Conversation{}, "", fmt.Errorf("no conversation %q in %s", name, dir)
		}
		return Conversation{}, "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConversation+1))
	if err != nil {
		return Conversation{}, "", err
	}
	if len(b) > maxConversation {
		return Conversation{}, "", fmt.Errorf("%s: larger than %d bytes", p, maxConversation)
	}
	var c Conversation
	if err := json.Unmarshal(b, &c); err != nil {
		return Conversation{}, "", fmt.Errorf("%s: %v", p, err)
	}
	for i, m := range c.Messages {
		switch m.Role {
		case "user", "assistant":
		default:
			return Conversation{}, "", fmt.Errorf("%s: messages[%d]: role %q (want user or assistant; the system message is \"system\")", p, i, m.Role)
		}
	}
	return c, p, nil
}

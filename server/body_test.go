package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest writes head and body to a new connection to ts and returns
// the response read within wait, and how long it took.
func rawRequest(t *testing.T, addr, head string, body func(c net.Conn), wait time.Duration) (*http.Response, string, time.Duration) {
	res, b, d, _ := rawRequestConn(t, addr, head, body, wait)
	return res, b, d
}

// rawRequestConn is rawRequest, also telling whether the server closed
// the connection within a second of its answer.
func rawRequestConn(t *testing.T, addr, head string, body func(c net.Conn), wait time.Duration) (*http.Response, string, time.Duration, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	start := time.Now()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		go body(c)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", wait, err)
	}
	b, _ := io.ReadAll(res.Body)
	d := time.Since(start)
	c.SetReadDeadline(time.Now().Add(time.Second))
	_, err = br.ReadByte()
	return res, string(b), d, err == io.EOF
}

// A body that stalls (Content-Length not reached) or never ends (chunks
// trickling in forever) is answered 408 once the body timeout passes, and
// the connection is closed (the issue: held forever, with or without
// --timeout). A streamed answer longer than the body timeout is not cut.
func TestBodyReadDeadline(t *testing.T) {
	b := newFakeBackend()
	b.delay = 40 * time.Millisecond
	_, ts := newTestServer(t, Config{BodyTimeout: 300 * time.Millisecond, Timeout: time.Minute}, b)
	addr := strings.TrimPrefix(ts.URL, "http://")
	stalled := "POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":"
	res, body, d, closed := rawRequestConn(t, addr, stalled, nil, 5*time.Second)
	if res.StatusCode != 408 || !strings.Contains(body, "not received within 300ms") || d > 2*time.Second {
		t.Errorf("stalled body: %d %s after %v", res.StatusCode, body, d)
	}
	if !res.Close || !closed {
		t.Errorf("stalled body: the connection is kept open (Connection: close %v, closed %v)", res.Close, closed)
	}
	chunked := "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
	drip := func(c net.Conn) {
		for i := 0; i < 100; i++ {
			if _, err := io.WriteString(c, "1\r\n \r\n"); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	res, body, d = rawRequest(t, addr, chunked, drip, 5*time.Second)
	if res.StatusCode != 408 || d > 2*time.Second {
		t.Errorf("endless chunked body: %d %s after %v", res.StatusCode, body, d)
	}
	// 12 tokens at 40 ms: the stream outlasts the body timeout.
	r := do(t, ts, "POST", "/api/generate", `{"model":"tiny","prompt":"hi","options":{"num_predict":12}}`)
	frames := wantStream(t, r, "application/x-ndjson", ndjson, 13)
	if frames[12]["done"] != true || frames[12]["eval_count"] != 12.0 {
		t.Errorf("long stream: last frame %v", frames[12])
	}
}

// "malformed JSON" is for bodies that are not JSON or hold a value of the
// wrong JSON type; a well-formed body whose value the route refuses (an
// image part, a bad keep_alive) gets the reason alone, so the client does
// not look for a syntax error.
func TestMalformedOnlyForBadJSON(t *testing.T) {
	_, ts := newTestServer(t, Config{}, newFakeBackend())
	for _, c := range []struct {
		path, body string
		malformed  bool
		want       string
	}{
		{"/v1/chat/completions", `{"model":"tiny","messages":[`, true, "unexpected end"},
		{"/api/chat", `{"model":"tiny","stream":1}`, true, "cannot unmarshal number"},
		{"/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, false, "not image_url"},
		{"/api/generate", `{"model":"tiny","prompt":"x","keep_alive":"bogus"}`, false, "is neither a duration"},
	} {
		r := do(t, ts, "POST", c.path, c.body)
		wantStatus(t, r, 400)
		body := string(r.body)
		if !strings.Contains(body, c.want) || strings.Contains(body, "malformed JSON") != c.malformed {
			t.Errorf("%s %s: %s (malformed JSON wanted: %v)", c.path, c.body, body, c.malformed)
		}
	}
}

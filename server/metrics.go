package server

import (
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus series, on a registry of their own.
type metrics struct {
	reg          *prometheus.Registry
	handler      http.Handler
	requests     *prometheus.CounterVec   // route, code
	latency      *prometheus.HistogramVec // route
	promptTokens *prometheus.CounterVec   // model
	genTokens    *prometheus.CounterVec   // model
	tokPerSec    *prometheus.HistogramVec // model
	queueDepth   prometheus.Gauge
	modelsLoaded prometheus.Gauge
	stats        *statsCollector
	load         *loadCollector
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "woolly_http_requests_total", Help: "HTTP requests by route and status code."}, []string{"route", "code"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "woolly_http_request_duration_seconds", Help: "Time to answer a request, streaming included.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"route"})
	m.promptTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "woolly_prompt_tokens_total", Help: "Prompt tokens evaluated."}, []string{"model"})
	m.genTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "woolly_generated_tokens_total", Help: "Tokens generated."}, []string{"model"})
	m.tokPerSec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "woolly_generation_tokens_per_second", Help: "Generation speed of each request.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14)}, []string{"model"})
	m.queueDepth = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "woolly_queue_depth", Help: "Requests waiting for a model."})
	m.modelsLoaded = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "woolly_models_loaded", Help: "Models in memory."})
	m.stats = &statsCollector{providers: map[string]func() map[string]float64{}}
	m.load = &loadCollector{}
	m.reg.MustRegister(m.requests, m.latency, m.promptTokens, m.genTokens, m.tokPerSec, m.queueDepth,
		m.modelsLoaded, m.stats, m.load, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

func (m *metrics) serve(w http.ResponseWriter, r *http.Request) { m.handler.ServeHTTP(w, r) }

func (m *metrics) request(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func (m *metrics) generation(model string, res *GenerateResult) {
	if res == nil {
		return
	}
	m.promptTokens.WithLabelValues(model).Add(float64(res.PromptTokens))
	m.genTokens.WithLabelValues(model).Add(float64(res.Tokens))
	if res.Tokens > 0 && res.GenDuration > 0 {
		m.tokPerSec.WithLabelValues(model).Observe(float64(res.Tokens) / res.GenDuration.Seconds())
	}
}

// RegisterStats exposes a statistics provider (the weight cache's, say) on
// /metrics: each key k of provider() becomes the gauge woolly_<name>_<k>.
// Registering a name again replaces its provider.
func (s *Server) RegisterStats(name string, provider func() map[string]float64) {
	s.metrics.stats.mu.Lock()
	defer s.metrics.stats.mu.Unlock()
	s.metrics.stats.providers[sanitize(name)] = provider
}

// statsCollector is an unchecked collector: its series are known only when
// the providers are called.
type statsCollector struct {
	mu        sync.Mutex
	providers map[string]func() map[string]float64
}

func (c *statsCollector) Describe(chan<- *prometheus.Desc) {}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	names := slices.Sorted(maps.Keys(c.providers))
	fs := make([]func() map[string]float64, len(names))
	for i, n := range names {
		fs[i] = c.providers[n]
	}
	c.mu.Unlock()
	for i, f := range fs {
		for k, v := range f() {
			fq := "woolly_" + names[i] + "_" + sanitize(k)
			desc := prometheus.NewDesc(fq, "Statistic "+k+" of "+names[i]+".", nil, nil)
			if mt, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v); err == nil {
				ch <- mt
			}
		}
	}
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_]`)

func sanitize(s string) string { return unsafeName.ReplaceAllString(s, "_") }

// StatsMap flattens a statistics struct (such as cache.Stats) for
// RegisterStats: numeric and bool fields become snake_case keys, durations
// are in seconds with a "_seconds" suffix, embedded structs are flattened,
// other fields are skipped.
//
//	srv.RegisterStats("prefix_cache", func() map[string]float64 { return server.StatsMap(pc.Stats()) })
func StatsMap(v any) map[string]float64 {
	out := map[string]float64{}
	flatten(reflect.ValueOf(v), out)
	return out
}

func flatten(v reflect.Value, out map[string]float64) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous { // promoted fields
			flatten(fv, out)
			continue
		}
		if !f.IsExported() {
			continue
		}
		key := snake(f.Name)
		switch {
		case fv.Type() == reflect.TypeFor[time.Duration]():
			out[key+"_seconds"] = time.Duration(fv.Int()).Seconds()
		case fv.CanInt():
			out[key] = float64(fv.Int())
		case fv.CanUint():
			out[key] = float64(fv.Uint())
		case fv.CanFloat():
			out[key] = fv.Float()
		case fv.Kind() == reflect.Bool:
			if fv.Bool() {
				out[key] = 1
			} else {
				out[key] = 0
			}
		}
	}
}

// snake turns "PeakBytes" into "peak_bytes" and "LoadTime" into "load_time".
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// loadCollector reports the scheduling signals of the Gateway API Inference
// Extension's model server protocol, under the vLLM names its endpoint
// picker reads by default:
//
//	vllm:num_requests_waiting   gauge  requests admitted but not generating yet
//	vllm:num_requests_running   gauge  generations holding a slot
//	vllm:kv_cache_usage_perc    gauge  KV-cache utilization, 0 to 1
//	vllm:gpu_cache_usage_perc   gauge  the same (the older vLLM name)
//	vllm:cache_config_info      gauge  1, labels block_size and num_gpu_blocks
//
// Woolly's KV is not paged: a slot holds DefaultCtx positions. Utilization is
// the positions the running generations fill over parallel slots x DefaultCtx
// summed over the loaded models; cache_config_info describes that capacity in
// blocks of kvBlockTokens positions.
type loadCollector struct {
	mu    sync.Mutex
	state func() loadState
}

const kvBlockTokens = 16

var (
	descWaiting = prometheus.NewDesc("vllm:num_requests_waiting", "Requests waiting for a model slot (loading or queued).", nil, nil)
	descRunning = prometheus.NewDesc("vllm:num_requests_running", "Requests generating (holding a model slot).", nil, nil)
	descKV      = prometheus.NewDesc("vllm:kv_cache_usage_perc", "KV-cache utilization of the loaded models, 0 to 1.", nil, nil)
	descKVOld   = prometheus.NewDesc("vllm:gpu_cache_usage_perc", "KV-cache utilization of the loaded models, 0 to 1 (older name).", nil, nil)
	descCfg     = prometheus.NewDesc("vllm:cache_config_info", "KV-cache capacity of the loaded models: block_size tokens x num_gpu_blocks.",
		[]string{"block_size", "num_gpu_blocks", "enable_prefix_caching"}, nil)
	descWRunning = prometheus.NewDesc("woolly_requests_running", "Requests generating (holding a model slot).", nil, nil)
	descWKV      = prometheus.NewDesc("woolly_kv_cache_usage_ratio", "KV-cache utilization of the loaded models, 0 to 1.", nil, nil)
	descWReady   = prometheus.NewDesc("woolly_ready", "1 when /readyz answers 200.", nil, nil)
)

func (c *loadCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWaiting, descRunning, descKV, descKVOld, descCfg, descWRunning, descWKV, descWReady} {
		ch <- d
	}
}

func (c *loadCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	f := c.state
	c.mu.Unlock()
	if f == nil {
		return
	}
	st := f()
	util := st.utilization()
	ready := 0.0
	if st.ready() {
		ready = 1
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descWaiting, float64(st.waiting))
	gauge(descRunning, float64(st.running))
	gauge(descKV, util)
	gauge(descKVOld, util)
	gauge(descCfg, 1, strconv.Itoa(kvBlockTokens), strconv.FormatInt(st.kvCap/kvBlockTokens, 10), "True")
	gauge(descWRunning, float64(st.running))
	gauge(descWKV, util)
	gauge(descWReady, ready)
}

// utilization is kvUsed/kvCap clamped to [0, 1]; 0 with nothing loaded.
func (st loadState) utilization() float64 {
	if st.kvCap <= 0 || st.kvUsed <= 0 {
		return 0
	}
	return min(1, float64(st.kvUsed)/float64(st.kvCap))
}

// ready: no model is loading and a request would not be refused for a full
// queue.
func (st loadState) ready() bool { return !st.loading && !st.queueFull }

// livez answers 200 while the server answers at all (a Kubernetes liveness
// probe).
func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// readyz answers 503 while a model loads or the request queue is full, so a
// load balancer or the inference gateway sends new requests elsewhere; 200
// otherwise (a Kubernetes readiness probe).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st := s.models.state()
	body := map[string]any{"status": "ready", "running": st.running, "waiting": st.waiting,
		"loading": st.loading, "queue_full": st.queueFull, "kv_cache_usage": st.utilization()}
	code := http.StatusOK
	if !st.ready() {
		code = http.StatusServiceUnavailable
		body["status"] = "not ready"
	}
	writeJSON(w, code, body)
}

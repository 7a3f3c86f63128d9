package console

import (
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

//go:embed assets/*.html assets/*.css assets/*.js
var assets embed.FS

// Console serves the pages; it is an http.Handler for "/".
type Console struct {
	b     Broker
	pages map[string]*template.Template
	mux   *http.ServeMux
}

var funcs = template.FuncMap{
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format("2006-01-02 15:04:05.000")
	},
	"rate":  func(f float64) string { return strings.TrimSuffix(strings.TrimRight(strconvF(f), "0"), ".") },
	"bytes": humanBytes,
	"perm":  permString,
	// add is a+b-c: a queue's messages are its max offset less its min.
	"add": func(a int, b, c int64) int { return a + int(b-c) },
}

// New returns the console of b.
func New(b Broker) *Console {
	c := &Console{b: b, pages: map[string]*template.Template{}, mux: http.NewServeMux()}
	for _, p := range []string{"index", "topics", "topic", "groups", "group", "message"} {
		c.pages[p] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+p+".html"))
	}
	static, _ := fs.Sub(assets, "assets")
	c.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	c.mux.HandleFunc("GET /{$}", c.index)
	c.mux.HandleFunc("GET /topics", c.topics)
	c.mux.HandleFunc("GET /topic", c.topic)
	c.mux.HandleFunc("GET /groups", c.groups)
	c.mux.HandleFunc("GET /group", c.group)
	c.mux.HandleFunc("GET /message", c.message)
	c.mux.HandleFunc("GET /api/throughput", c.throughput)
	return c
}

// ServeHTTP implements http.Handler.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.mux.ServeHTTP(w, r) }

func (c *Console) render(w http.ResponseWriter, page, title string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'")
	err := c.pages[page].Execute(w, map[string]any{"Title": title, "Page": page, "Data": data, "Overview": c.b.Overview()})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (c *Console) index(w http.ResponseWriter, r *http.Request) {
	c.render(w, "index", "Broker", nil)
}

func (c *Console) topics(w http.ResponseWriter, r *http.Request) {
	c.render(w, "topics", "Topics", c.b.Topics())
}

func (c *Console) topic(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	for _, t := range c.b.Topics() {
		if t.Name == name {
			c.render(w, "topic", "Topic "+name, t)
			return
		}
	}
	http.Error(w, "no topic "+name, http.StatusNotFound)
}

func (c *Console) groups(w http.ResponseWriter, r *http.Request) {
	c.render(w, "groups", "Consumer groups", c.b.Groups())
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	g, ok := c.b.Group(name)
	if !ok {
		http.Error(w, "no consumer group "+name, http.StatusNotFound)
		return
	}
	c.render(w, "group", "Consumer group "+name, g)
}

// messageView is the lookup page's data.
type messageView struct {
	Topic, ID, Key string
	Searched       bool
	Found          []Message
	Err            string
}

func (c *Console) message(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := messageView{Topic: strings.TrimSpace(q.Get("topic")), ID: strings.TrimSpace(q.Get("id")), Key: strings.TrimSpace(q.Get("key"))}
	var err error
	switch {
	case v.ID != "":
		v.Searched = true
		v.Found, err = c.b.MessageByID(v.Topic, v.ID)
	case v.Key != "":
		v.Searched = true
		if v.Topic == "" {
			err = errString("a lookup by key needs its topic")
		} else {
			v.Found, err = c.b.MessagesByKey(v.Topic, v.Key)
		}
	}
	if err != nil {
		v.Err = err.Error()
	}
	c.render(w, "message", "Message lookup", v)
}

type errString string

func (e errString) Error() string { return string(e) }

func (c *Console) throughput(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	t := c.b.Throughput()
	json.NewEncoder(w).Encode(map[string]int64{
		"at": t.AtMillis, "messagesIn": t.MessagesIn, "messagesOut": t.MessagesOut,
		"bytesIn": t.BytesIn, "bytesOut": t.BytesOut,
	})
}

package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// MaxSize is the largest configuration [Parse] and [Load] accept, in
// bytes.
const MaxSize = 1 << 20

// Load reads the file at path and parses it with [Parse]. In production
// env is os.LookupEnv.
func Load(path string, env func(string) (string, bool)) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: open %q: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %q: %w", path, err)
	}
	c, err := Parse(data, env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse parses and validates a YAML configuration, then applies the
// environment overrides looked up with env (nil means none; see the
// package documentation for the names). It returns every problem found,
// joined with errors.Join: [*KeyError] values in file order, or a single
// error matching [ErrSyntax] or [ErrTooLarge] when the input cannot be
// read as YAML at all.
func Parse(data []byte, env func(string) (string, bool)) (*Config, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxSize)
	}
	root, err := document(data)
	if err != nil {
		return nil, err
	}
	p := &parser{vals: map[string]*setting{}, failed: map[string]bool{}}
	if root != nil {
		p.walkSection(root, "")
	}
	if env != nil {
		p.applyEnv(env)
	}
	c := p.build()
	if len(p.errs) > 0 {
		return nil, p.joined()
	}
	return c, nil
}

// setting is one scalar value and where it came from.
type setting struct {
	text   string
	null   bool   // YAML null: "~", "null", or nothing after the colon
	line   int    // 1-based line in the file; 0 for the environment
	env    string // the environment variable, if it came from there
	secret bool
	// over is the file's setting an environment variable replaced; nil if none.
	over *setting
}

func (s *setting) source() string {
	if s.env != "" {
		return s.env
	}
	return "line " + strconv.Itoa(s.line)
}

// streamEntry is one item of streams, as written.
type streamEntry struct {
	line int
	vals map[string]*setting
}

// section records a mapping of the schema that was present in the file.
type section struct {
	path  string
	line  int
	empty bool
}

// parser collects the settings present, then builds the Config from them,
// collecting every problem on the way.
type parser struct {
	vals           map[string]*setting // global keys present, by path
	sections       []section
	streams        []streamEntry
	streamsPresent bool
	streamsLine    int
	failed         map[string]bool // paths whose value was rejected
	errs           []*KeyError
}

// document decodes exactly one YAML document and returns its top-level
// mapping, or nil when the document is empty.
func document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, syntaxError(err)
		}
		return nil, fmt.Errorf("%w: line %d: a second YAML document; ferry reads one, remove the \"---\" and what follows", ErrSyntax, extra.Line)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := resolve(doc.Content[0])
	switch {
	case isNull(root):
		return nil, nil
	case root.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("%w: line %d: the file must be a mapping of keys, starting with e.g. \"mode: archive\"", ErrSyntax, root.Line)
	}
	return root, nil
}

// maxAliasDepth bounds how many aliases resolve follows.
const maxAliasDepth = 16

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; i < maxAliasDepth && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// walkMapping calls visit for each key of m, in file order, after
// rejecting keys that are not scalars, repeat, or are not in allowed. v is
// resolved: an alias's node is its anchor's, on the anchor's line, so
// errors about a value give k.Line, where the key is.
func (p *parser) walkMapping(m *yaml.Node, prefix string, allowed []string, visit func(name string, k, v *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.add(&KeyError{Path: join(prefix, "?"), Line: k.Line, Source: "line " + strconv.Itoa(k.Line),
				Problem: "a key must be a plain name", Fix: "write name: value", Kind: ErrInvalid})
			continue
		}
		name, path := k.Value, join(prefix, k.Value)
		if first, dup := seen[name]; dup {
			p.add(&KeyError{Path: path, Line: k.Line, Source: "line " + strconv.Itoa(k.Line),
				Problem: fmt.Sprintf("is given twice (first on line %d)", first),
				Fix:     "keep one of them", Kind: ErrConflict})
			continue
		}
		seen[name] = k.Line
		if k.Tag == "!!merge" {
			p.add(&KeyError{Path: path, Line: k.Line, Source: "line " + strconv.Itoa(k.Line),
				Problem: "is a YAML merge key, which ferry does not read", Fix: "write the keys out here; an alias of a whole value (key: *name) is read", Kind: ErrUnknownKey})
			continue
		}
		if !slices.Contains(allowed, name) {
			fix := "remove it"
			if len(name) <= 64 {
				fix = unknownKeyFix(prefix, name, allowed)
			}
			p.add(&KeyError{Path: path, Value: name, Line: k.Line, Source: "line " + strconv.Itoa(k.Line),
				Problem: "is not a known key", Fix: fix, Kind: ErrUnknownKey})
			continue
		}
		visit(name, k, v)
	}
}

// walkSection records the scalar keys of a section ("" is the top level)
// and descends into its subsections and streams.
func (p *parser) walkSection(m *yaml.Node, prefix string) {
	p.walkMapping(m, prefix, children(prefix), func(name string, k, v *yaml.Node) {
		path := join(prefix, name)
		switch {
		case prefix == "" && name == streamsKey:
			p.walkStreams(k, v)
		case isSection(path):
			switch {
			case isNull(v) || (v.Kind == yaml.MappingNode && len(v.Content) == 0):
				p.sections = append(p.sections, section{path: path, line: k.Line, empty: true})
			case v.Kind != yaml.MappingNode:
				p.add(&KeyError{Path: path, Line: k.Line, Source: "line " + strconv.Itoa(k.Line),
					Problem: "must be a mapping of keys", Fix: "indent its keys under " + path + ":", Kind: ErrInvalid})
			default:
				p.sections = append(p.sections, section{path: path, line: k.Line})
				p.walkSection(v, path)
			}
		default:
			key, _ := lookupKey(globalKeys, path)
			if s := p.scalar(path, k.Line, v, key.secret); s != nil {
				p.vals[path] = s
			}
		}
	})
}

// scalar returns v, the value of the key on line, as a setting, or records
// an error and returns nil if v is a list or a mapping. The setting is on
// the key's line, not v's: an alias (*n) resolves to its anchor's node, on
// the anchor's line.
func (p *parser) scalar(path string, line int, v *yaml.Node, secret bool) *setting {
	if v.Kind != yaml.ScalarNode {
		p.add(&KeyError{Path: path, Line: line, Source: "line " + strconv.Itoa(line),
			Problem: "must be a single value, not a list or a mapping", Fix: "write " + path + ": <value>", Kind: ErrInvalid})
		return nil
	}
	return &setting{text: v.Value, null: isNull(v), line: line, secret: secret}
}

// walkStreams records the entries of streams.
func (p *parser) walkStreams(k, v *yaml.Node) {
	p.streamsPresent, p.streamsLine = true, k.Line
	if isNull(v) {
		return
	}
	if v.Kind != yaml.SequenceNode {
		p.failed[streamsKey] = true
		p.add(&KeyError{Path: streamsKey, Line: k.Line, Source: "line " + strconv.Itoa(k.Line),
			Problem: "must be a list of streams", Fix: "write each stream as a list item starting with \"- name: ...\"", Kind: ErrInvalid})
		return
	}
	names := streamKeyNames()
	for i, item := range v.Content {
		line := item.Line // an alias's own line, not its anchor's
		item = resolve(item)
		prefix := fmt.Sprintf("%s[%d]", streamsKey, i)
		e := streamEntry{line: line, vals: map[string]*setting{}}
		if item.Kind != yaml.MappingNode {
			p.add(&KeyError{Path: prefix, Line: line, Source: "line " + strconv.Itoa(line),
				Problem: "must be a mapping with name, channel, stream_id and topic", Fix: "write \"- name: ...\" and the other keys indented under it", Kind: ErrInvalid})
			e.vals = nil
		} else {
			p.walkMapping(item, prefix, names, func(name string, k, v *yaml.Node) {
				if s := p.scalar(prefix+"."+name, k.Line, v, false); s != nil {
					e.vals[name] = s
				}
			})
		}
		p.streams = append(p.streams, e)
	}
}

// applyEnv overrides global keys from the environment. An override counts
// as present, even when empty.
func (p *parser) applyEnv(env func(string) (string, bool)) {
	for _, k := range globalKeys {
		name := envName(k.path)
		if v, ok := env(name); ok {
			p.vals[k.path] = &setting{text: v, env: name, secret: k.secret, over: p.vals[k.path]}
		}
	}
}

func (p *parser) add(e *KeyError) { p.errs = append(p.errs, e) }

// joined returns the errors in file order: those not tied to a line
// first, in the order found, then by line.
func (p *parser) joined() error {
	slices.SortStableFunc(p.errs, func(a, b *KeyError) int { return cmp.Compare(a.Line, b.Line) })
	errs := make([]error, len(p.errs))
	for i, e := range p.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

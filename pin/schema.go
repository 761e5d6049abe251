package pin

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// Defaults for [SchemaLimits].
const (
	DefaultSchemaMaxBytes       = 256 << 10
	DefaultSchemaMaxDepth       = 64
	DefaultSchemaMaxEvaluations = 1000
	DefaultSchemaMaxSubschemas  = 5000
)

// Pattern cost bounds, in estimated RE2 instructions (repetitions
// expanded). Compile time grows with them; RE2 matching stays linear.
const (
	maxPatternUnits       = 10000  // one pattern in the schema
	maxSchemaPatternUnits = 200000 // all patterns of one schema together (each is compiled twice)
	maxFormatRegexUnits   = 1000   // a "format": "regex" argument, at validation
)

// schemaBase is the synthetic, non-file URI a schema is compiled under. The
// .invalid top-level domain never resolves, and nothing is ever fetched
// from it: every URL the compiler cannot resolve inside the document goes to
// denyLoader.
const (
	schemaHost = "https://mcp-guard.invalid/"
	schemaBase = schemaHost + "tool-schema.json"
)

// Bounds on what a validation error says.
const (
	maxFailures       = 10
	maxSchemaFailures = 3 // in a CompileSchema error
	maxFailureReason  = 200
	maxErrText        = 300
)

// SchemaLimits bounds what CompileSchema accepts. Zero fields take their
// defaults.
type SchemaLimits struct {
	// MaxBytes caps the raw schema size (default 256 KiB).
	MaxBytes int
	// MaxDepth caps the nesting of JSON objects and arrays in the schema
	// document, the root object being 1 (default 64). Compile cost grows
	// faster than linearly with depth. Values above canon.MaxDepth (256)
	// act as 256: the strict reader refuses deeper documents.
	MaxDepth int
	// MaxEvaluations bounds validation work: one Validate may evaluate at
	// most MaxEvaluations × (values in the arguments + 16) subschemas
	// (default 1000). A schema whose $ref/allOf/anyOf fan-out needs more
	// (a few hundred bytes of schema can need 2^30 evaluations) fails
	// validation instead of burning CPU.
	MaxEvaluations int
	// MaxSubschemas caps the objects and booleans in the schema document,
	// each a potential subschema (default 5000). The compiler's cost
	// grows with the square of their number: 20,000 empty subschemas
	// (58 KiB) take seconds.
	MaxSubschemas int
}

func (l SchemaLimits) withDefaults() SchemaLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultSchemaMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultSchemaMaxDepth
	}
	if l.MaxDepth > canon.MaxDepth {
		l.MaxDepth = canon.MaxDepth
	}
	if l.MaxSubschemas <= 0 {
		l.MaxSubschemas = DefaultSchemaMaxSubschemas
	}
	if l.MaxEvaluations <= 0 {
		l.MaxEvaluations = DefaultSchemaMaxEvaluations
	}
	return l
}

// Schema is a compiled inputSchema. It is safe for concurrent use by
// Validate; validations of one Schema run one at a time (each is bounded by
// SchemaLimits.MaxEvaluations).
type Schema struct {
	sch      *jsonschema.Schema
	perValue int
	declared map[string][]string // declaredNames: case-folded -> as declared

	mu     sync.Mutex // serializes Validate: the budget is per call
	budget *budget
}

// budget counts subschema evaluations during one Validate. Every object
// subschema of a compiled Schema carries a budgetExt pointing at it.
type budget struct {
	active      bool
	used, limit int
}

// budgetExceeded is the panic value that stops a validation over budget.
type budgetExceeded struct{}

type budgetExt struct{ b *budget }

func (e budgetExt) Validate(*jsonschema.ValidatorContext, any) {
	if !e.b.active {
		return
	}
	e.b.used++
	if e.b.used > e.b.limit {
		panic(budgetExceeded{})
	}
}

// refusedURL is what denyLoader returns: the compiler asked for a document
// that is not the schema itself.
type refusedURL struct{ url string }

func (e *refusedURL) Error() string {
	return "schema refers outside itself: " + shortURL(e.url)
}

// denyLoader refuses every URL: a tool's schema must be self-contained, and
// the compiler must never read a file or the network. (The library's
// default loader opens any file:// URL.)
type denyLoader struct{}

func (denyLoader) Load(url string) (any, error) { return nil, &refusedURL{url} }

// noFormats stand in for every format the library knows, so formats are
// annotations only under every draft (the library asserts them for
// draft-07 and older by default). The upstream owns its formats' meaning;
// the guard checks structure.
var noFormats = func() []*jsonschema.Format {
	var fs []*jsonschema.Format
	for _, n := range []string{
		"json-pointer", "relative-json-pointer", "uuid", "duration", "period",
		"ipv4", "ipv6", "hostname", "email", "date", "time", "date-time",
		"uri", "iri", "uri-reference", "iri-reference", "uri-template", "semver",
		"idn-email", "idn-hostname",
	} {
		fs = append(fs, &jsonschema.Format{Name: n, Validate: func(any) error { return nil }})
	}
	return fs
}()

// CompileSchema compiles raw, a tool's inputSchema, or refuses it with a
// one-line reason a person can act on. The checks run in this order,
// cheapest first, so costly shapes are refused before the compiler sees
// them: size (MaxBytes); strict JSON (canon: duplicate keys, invalid
// UTF-8, numbers that would change); a JSON object; nesting depth
// (MaxDepth; a 1,000- or 100,000-level schema is refused in
// milliseconds); the number of objects and booleans (MaxSubschemas). Then
// it compiles with a fresh compiler:
//
//   - $schema honoured for draft-04, -06, -07, 2019-09 and 2020-12 (from
//     the library's embedded metaschemas; 2020-12 when absent); any other
//     $schema is refused, since it would have to be loaded;
//   - no loader: every reference that does not resolve inside the
//     document ($ref to https:, http:, file:, urn:, a relative document,
//     or even the embedded json-schema.org metaschemas) is refused; the
//     compiler never opens a file or the network. Internal references
//     (#/$defs/x, #/definitions/x, $anchor, an embedded $id) work;
//   - patterns run on Go's linear-time RE2 after rewriting ECMA \uXXXX
//     escapes; lookaround and backreferences are refused; the expanded
//     size of each pattern, and of all together, is capped;
//   - formats are annotations, under every draft (never asserted).
func CompileSchema(raw []byte, lim SchemaLimits) (*Schema, error) {
	lim = lim.withDefaults()
	if len(raw) > lim.MaxBytes {
		return nil, fmt.Errorf("inputSchema is %d bytes, over the %d-byte limit", len(raw), lim.MaxBytes)
	}
	doc, err := canon.Decode(raw)
	if err != nil {
		var ce *canon.Error
		if errors.As(err, &ce) && strings.HasPrefix(ce.Reason, "nesting deeper than") {
			return nil, depthError(lim.MaxDepth, ce.Pointer)
		}
		return nil, fmt.Errorf("inputSchema is not strict JSON: %s", safetext.Show(err.Error(), maxErrText))
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("inputSchema is a JSON %s, not an object", jsonKind(doc))
	}
	if _, deep := tooDeep(obj, 1, lim.MaxDepth, false); deep {
		ptr, _ := tooDeep(obj, 1, lim.MaxDepth, true) // again, in key order, for a stable message
		return nil, depthError(lim.MaxDepth, ptr)
	}
	if n := countNodes(obj, lim.MaxSubschemas); n > lim.MaxSubschemas {
		return nil, fmt.Errorf("inputSchema has more than %d objects and booleans (potential subschemas); compiling it would take too long", lim.MaxSubschemas)
	}

	b := &budget{}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(denyLoader{})
	rb := &regexBudget{compiling: true}
	c.UseRegexpEngine(rb.compile)
	for _, f := range noFormats {
		c.RegisterFormat(f)
	}
	// A vocabulary with no keywords whose compiled form is attached to
	// every object subschema: it counts evaluations (see budget).
	// AssertVocabs makes 2019-09 and 2020-12 apply it too; it changes
	// nothing else.
	c.RegisterVocabulary(&jsonschema.Vocabulary{
		URL: "urn:mcp-guard:vocab:budget",
		Compile: func(*jsonschema.CompilerContext, map[string]any) (jsonschema.SchemaExt, error) {
			return budgetExt{b}, nil
		},
	})
	c.AssertVocabs()
	if err := c.AddResource(schemaBase, obj); err != nil {
		return nil, compileError(err, obj)
	}
	sch, err := c.Compile(schemaBase)
	rb.compiling = false
	if err != nil {
		return nil, compileError(err, obj)
	}
	if loc := outsideRef(sch); loc != "" {
		return nil, fmt.Errorf("inputSchema refers outside itself: %s", safetext.Show(shortURL(loc), maxErrText))
	}
	return &Schema{sch: sch, perValue: lim.MaxEvaluations, budget: b, declared: declaredNames(sch)}, nil
}

func depthError(max int, ptr string) error {
	return fmt.Errorf("inputSchema nests deeper than %d levels (at %s)", max, safetext.Show(ptr, 120))
}

// tooDeep reports whether v, at depth d (the root object being 1), holds
// a value nested deeper than max, and where (the first such place in key
// order when sorted is set). Its recursion is bounded by canon.MaxDepth,
// which the decoder already enforced.
func tooDeep(v any, d, max int, sorted bool) (string, bool) {
	if d > max {
		return "", true
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		if sorted {
			sort.Strings(keys)
		}
		for _, k := range keys {
			if p, deep := tooDeep(x[k], d+1, max, sorted); deep {
				return "/" + escapePtr(k) + p, true
			}
		}
	case []any:
		for i, e := range x {
			if p, deep := tooDeep(e, d+1, max, sorted); deep {
				return "/" + strconv.Itoa(i) + p, true
			}
		}
	}
	return "", false
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	default:
		return "number"
	}
}

// compileError turns a compiler error into one line that names the
// problem without the synthetic base URL.
func compileError(err error, doc map[string]any) error {
	var ru *refusedURL
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) { // LoadURLError does not unwrap
		errors.As(le.Err, &ru)
	}
	if ru != nil || errors.As(err, &ru) {
		if s, ok := doc["$schema"].(string); ok && stripFrag(s) == stripFrag(ru.url) {
			return fmt.Errorf("inputSchema has an unknown \"$schema\" %s: only draft-04, draft-06, draft-07, 2019-09 and 2020-12 are known, and other metaschemas would have to be loaded",
				safetext.Show(strconv.Quote(s), maxErrText))
		}
		return fmt.Errorf("inputSchema refers outside itself: %s", safetext.Show(shortURL(ru.url), maxErrText))
	}
	var sv *jsonschema.SchemaValidationError
	if errors.As(err, &sv) {
		var ve *jsonschema.ValidationError
		if errors.As(sv.Err, &ve) {
			fs, more := flatten(ve, maxSchemaFailures)
			return fmt.Errorf("inputSchema is not a valid JSON Schema: %s", joinFailures(fs, more))
		}
	}
	return fmt.Errorf("inputSchema does not compile: %s", safetext.Show(cleanURLs(err.Error()), maxErrText))
}

func stripFrag(u string) string {
	u, _, _ = strings.Cut(u, "#")
	return u
}

// shortURL shows a URL relative to the synthetic base when it is under it.
func shortURL(u string) string {
	if rest, ok := strings.CutPrefix(u, schemaBase); ok {
		if rest == "" {
			return "#"
		}
		return rest
	}
	if rest, ok := strings.CutPrefix(u, schemaHost); ok {
		return rest
	}
	return u
}

func cleanURLs(s string) string {
	s = strings.ReplaceAll(s, schemaBase, "")
	return strings.ReplaceAll(s, schemaHost, "")
}

// outsideRef returns the location of a compiled subschema that lives
// outside the document, or "". The only such schemas the compiler can
// reach without the loader are its embedded metaschemas (a $ref to
// "https://json-schema.org/draft/2020-12/schema" compiles with no I/O);
// those are refused like any other outside reference.
func outsideRef(root *jsonschema.Schema) string {
	loc := ""
	walkSchemas(root, func(s *jsonschema.Schema) bool {
		if strings.HasPrefix(s.Location, "http://json-schema.org/") || strings.HasPrefix(s.Location, "https://json-schema.org/") {
			loc = s.Location
			return false
		}
		return true
	})
	return loc
}

// walkSchemas calls fn once for root and every subschema reachable from it,
// until fn returns false.
func walkSchemas(root *jsonschema.Schema, fn func(*jsonschema.Schema) bool) {
	seen := map[*jsonschema.Schema]bool{}
	stack := []*jsonschema.Schema{root}
	push := func(s *jsonschema.Schema) {
		if s != nil && !seen[s] {
			seen[s] = true
			stack = append(stack, s)
		}
	}
	pushAny := func(v any) {
		switch x := v.(type) {
		case *jsonschema.Schema:
			push(x)
		case []*jsonschema.Schema:
			for _, s := range x {
				push(s)
			}
		}
	}
	seen[root] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !fn(s) {
			return
		}
		push(s.Ref)
		push(s.RecursiveRef)
		if s.DynamicRef != nil {
			push(s.DynamicRef.Ref)
		}
		push(s.Not)
		push(s.If)
		push(s.Then)
		push(s.Else)
		push(s.PropertyNames)
		push(s.UnevaluatedProperties)
		push(s.Contains)
		push(s.Items2020)
		push(s.UnevaluatedItems)
		push(s.ContentSchema)
		for _, l := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
			for _, x := range l {
				push(x)
			}
		}
		for _, x := range s.Properties {
			push(x)
		}
		for _, x := range s.PatternProperties {
			push(x)
		}
		for _, x := range s.DependentSchemas {
			push(x)
		}
		for _, x := range s.Dependencies {
			pushAny(x)
		}
		pushAny(s.AdditionalProperties)
		pushAny(s.Items)
		pushAny(s.AdditionalItems)
	}
}

// regexBudget bounds what compiling patterns costs. RE2 matching is
// linear, but compiling expands counted repetitions (about 0.3-1 µs per
// instruction): 64 KiB of patterns like (a|b|c){1,999} took 3 s. While a schema compiles, each pattern and
// their total are capped; afterwards the engine only serves "format":
// "regex" checks of argument strings, capped lower.
type regexBudget struct {
	compiling bool
	used      int
}

// compile compiles a JSON Schema (ECMA-262) pattern with Go's linear-time
// RE2 engine, within rb's budget, after rewriting the ECMA escapes RE2
// lacks: \uXXXX (and surrogate pairs) and \u{X...} become \x{X...}.
// Anything RE2 cannot express (lookaround, backreferences) is refused,
// never run on a backtracking engine.
func (rb *regexBudget) compile(s string) (jsonschema.Regexp, error) {
	src := ecmaToRE2(s)
	tree, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	n := reUnits(tree)
	if !rb.compiling {
		if n > maxFormatRegexUnits {
			return nil, fmt.Errorf("pattern expands to about %d instructions, over the %d limit", n, maxFormatRegexUnits)
		}
	} else {
		if n > maxPatternUnits {
			return nil, fmt.Errorf("pattern expands to about %d instructions, over the %d limit", n, maxPatternUnits)
		}
		rb.used += n
		if rb.used > maxSchemaPatternUnits {
			return nil, fmt.Errorf("the schema's patterns expand to more than %d instructions in total", maxSchemaPatternUnits)
		}
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	return ecmaRE{re, s}, nil
}

// reUnits estimates the size of the program RE2 compiles re to, with
// counted repetitions expanded. It saturates instead of overflowing.
func reUnits(re *syntax.Regexp) int {
	const inf = 1 << 30
	n := 1
	if re.Op == syntax.OpLiteral {
		n += len(re.Rune)
	} // a character class is one instruction however many ranges it has
	for _, sub := range re.Sub {
		n = min(n+reUnits(sub), inf)
	}
	if re.Op == syntax.OpRepeat {
		k := re.Max
		if k < 0 {
			k = re.Min + 1
		}
		n = min(n*max(k, 1), inf)
	}
	return n
}

// countNodes counts the objects and booleans in v, stopping past limit.
// Its recursion is bounded by the depth checked before.
func countNodes(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			n++
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case bool:
			n++
		}
	}
	walk(v)
	return n
}

// ecmaRE shows the pattern as the schema spelled it.
type ecmaRE struct {
	*regexp.Regexp
	src string
}

func (r ecmaRE) String() string { return r.src }

func ecmaToRE2(s string) string {
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] != 'u' {
			b.WriteString(s[i : i+2]) // keep any other escape, including \\, whole
			i++
			continue
		}
		if r, n := hex4(s[i+2:]); n > 0 {
			if r >= 0xD800 && r <= 0xDBFF && strings.HasPrefix(s[i+6:], `\u`) {
				if lo, m := hex4(s[i+8:]); m > 0 && lo >= 0xDC00 && lo <= 0xDFFF {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			fmt.Fprintf(&b, `\x{%X}`, r)
			i += 5
			continue
		}
		if strings.HasPrefix(s[i+2:], "{") {
			if end := strings.IndexByte(s[i+2:], '}'); end > 1 && isHex(s[i+3:i+2+end]) {
				fmt.Fprintf(&b, `\x{%s}`, s[i+3:i+2+end])
				i += 2 + end
				continue
			}
		}
		b.WriteString(`\u`) // RE2 will refuse it, with its own message
		i++
	}
	return b.String()
}

func hex4(s string) (rune, int) {
	if len(s) < 4 || !isHex(s[:4]) {
		return 0, 0
	}
	v, _ := strconv.ParseUint(s[:4], 16, 32)
	return rune(v), 4
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// ValidationError says why arguments do not match a tool's inputSchema.
type ValidationError struct {
	// Failures are the failing leaves of the validation, sorted by
	// instance location then reason, at most 10.
	Failures []Failure
	// Omitted counts failures left out of Failures.
	Omitted int
}

// Failure is one reason arguments fail their schema. Both fields are
// display-safe: escaped with safetext and cut to about 200 bytes, because
// messages can echo hostile or secret argument values.
type Failure struct {
	Pointer string // JSON Pointer of the failing value; "" for the whole document
	Reason  string
}

// Error is one line: `arguments do not match the tool's inputSchema: at
// /path: minLength: got 0, want 1; at /: missing property 'content'`.
func (e *ValidationError) Error() string {
	return "arguments do not match the tool's inputSchema: " + joinFailures(e.Failures, e.Omitted)
}

// Detail lists the failures alone, one line: `at /path: minLength: got 0,
// want 1; at /: missing property 'content'`.
func (e *ValidationError) Detail() string {
	return joinFailures(e.Failures, e.Omitted)
}

func joinFailures(fs []Failure, more int) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString("; ")
		}
		p := f.Pointer
		if p == "" {
			p = "/"
		}
		b.WriteString("at ")
		b.WriteString(p)
		b.WriteString(": ")
		b.WriteString(f.Reason)
	}
	if more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return b.String()
}

var printer = message.NewPrinter(language.English)

// flatten lists the leaves of a validation error tree, deduplicated and in
// a stable order, at most limit, and how many more there were.
func flatten(ve *jsonschema.ValidationError, limit int) ([]Failure, int) {
	type leaf struct {
		tokens []string
		reason string
	}
	var leaves []leaf
	stack := []*jsonschema.ValidationError{ve}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(e.Causes) > 0 {
			stack = append(stack, e.Causes...)
			continue
		}
		leaves = append(leaves, leaf{e.InstanceLocation, cleanURLs(e.ErrorKind.LocalizedString(printer))})
	}
	sort.Slice(leaves, func(i, j int) bool {
		a, b := leaves[i], leaves[j]
		for k := 0; k < len(a.tokens) && k < len(b.tokens); k++ {
			if a.tokens[k] != b.tokens[k] {
				return a.tokens[k] < b.tokens[k]
			}
		}
		if len(a.tokens) != len(b.tokens) {
			return len(a.tokens) < len(b.tokens)
		}
		return a.reason < b.reason
	})
	var fs []Failure
	more := 0
	var last Failure
	for i, l := range leaves {
		var p strings.Builder
		for _, t := range l.tokens {
			p.WriteByte('/')
			p.WriteString(escapePtr(t))
		}
		f := Failure{Pointer: safetext.Show(p.String(), maxFailureReason), Reason: safetext.Cut(oneLine(l.reason), maxFailureReason)}
		if i > 0 && f == last {
			continue
		}
		last = f
		if len(fs) < limit {
			fs = append(fs, f)
		} else {
			more++
		}
	}
	return fs, more
}

func escapePtr(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// Validate validates an argument document, as decoded by canon.Decode
// (json.Number numbers, compared exactly). It returns nil or a
// *ValidationError.
func (s *Schema) Validate(doc any) (err error) {
	if s == nil || s.sch == nil {
		return &ValidationError{Failures: []Failure{{Reason: "no compiled inputSchema"}}}
	}
	values, deep := countValues(doc, 0)
	if deep {
		return &ValidationError{Failures: []Failure{{Reason: fmt.Sprintf("arguments nest deeper than %d levels", canon.MaxDepth)}}}
	}
	if f := caseMismatch(doc, s.declared, ""); f != nil {
		return &ValidationError{Failures: []Failure{*f}}
	}
	limit := s.perValue * (values + 16)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.budget.active, s.budget.used, s.budget.limit = true, 0, limit
	defer func() {
		s.budget.active = false
		if r := recover(); r != nil {
			if _, ok := r.(budgetExceeded); !ok {
				panic(r)
			}
			err = &ValidationError{Failures: []Failure{{Reason: fmt.Sprintf(
				"checking these arguments needs more than %d schema evaluations (the inputSchema fans out through $ref/allOf/anyOf/oneOf); refused to bound the cost", limit)}}}
		}
	}()
	verr := s.sch.Validate(doc)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(verr, &ve) {
		fs, more := flatten(ve, maxFailures)
		return &ValidationError{Failures: fs, Omitted: more}
	}
	return &ValidationError{Failures: []Failure{{Reason: safetext.Cut(oneLine(cleanURLs(verr.Error())), maxFailureReason)}}}
}

// oneLine shows every character that could hide, move or reorder text as
// \u{XXXX} (newlines as \n, invalid UTF-8 as \x{XX}). Unlike
// safetext.Escape it keeps backslashes as they are: the library already
// quotes the values it echoes, and escaping again would double them.
func oneLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x{%02X}`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case safetext.Suspicious(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// countValues counts the JSON values in doc and reports whether it nests
// deeper than canon.MaxDepth. Its recursion stops there.
func countValues(v any, d int) (int, bool) {
	if d > canon.MaxDepth {
		return 0, true
	}
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			m, deep := countValues(e, d+1)
			if deep {
				return 0, true
			}
			n += m
		}
	case []any:
		for _, e := range x {
			m, deep := countValues(e, d+1)
			if deep {
				return 0, true
			}
			n += m
		}
	}
	return n, false
}

// SchemaCache caches compiled schemas (and refusals) by the canonical
// digest of the raw schema bytes. Whitespace-only variants of one schema
// share an entry; the size cap is still checked on the raw bytes. It is
// safe for concurrent use and holds at most max entries, evicting the
// oldest.
type SchemaCache struct {
	lim SchemaLimits
	max int

	mu    sync.Mutex
	m     map[string]cacheEntry
	order []string // insertion order, for eviction
}

type cacheEntry struct {
	s   *Schema
	err error
}

// DefaultSchemaCacheSize is the size NewSchemaCache uses when max <= 0.
const DefaultSchemaCacheSize = 1024

// NewSchemaCache returns an empty cache compiling with lim.
func NewSchemaCache(lim SchemaLimits, max int) *SchemaCache {
	if max <= 0 {
		max = DefaultSchemaCacheSize
	}
	return &SchemaCache{lim: lim.withDefaults(), max: max, m: map[string]cacheEntry{}}
}

// Compile returns the compiled schema for raw, compiling it on a miss.
func (c *SchemaCache) Compile(raw []byte) (*Schema, error) {
	if len(raw) > c.lim.MaxBytes {
		return CompileSchema(raw, c.lim)
	}
	d, err := canon.Digest(raw)
	if err != nil {
		return CompileSchema(raw, c.lim) // refused fast, with its reason
	}
	key := fmt.Sprintf("%s/%d/%d/%d/%d", d, c.lim.MaxBytes, c.lim.MaxDepth, c.lim.MaxEvaluations, c.lim.MaxSubschemas)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return e.s, e.err
	}
	s, err := CompileSchema(raw, c.lim)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok { // compiled concurrently: keep the first
		return e.s, e.err
	}
	for len(c.m) >= c.max && len(c.order) > 0 {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[key] = cacheEntry{s, err}
	c.order = append(c.order, key)
	return s, err
}

// CompileOutput is Compile for a tool's outputSchema: the same checks and
// caps, its refusals worded for an outputSchema.
func (c *SchemaCache) CompileOutput(raw []byte) (*Schema, error) {
	s, err := c.Compile(raw)
	if err != nil {
		// Every refusal CompileSchema words starts with "inputSchema".
		if rest, ok := strings.CutPrefix(err.Error(), "inputSchema"); ok {
			return nil, errors.New("outputSchema" + rest)
		}
		return nil, err
	}
	return s, nil
}

// Len reports how many entries the cache holds.
func (c *SchemaCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

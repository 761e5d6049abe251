// Package classify holds the operator's rules and matches a call (server
// name, upstream tool name, decoded arguments) to a class and an action.
//
// The package is pure: it does no I/O, knows nothing of MCP, sessions or the
// ledger, and has no package-level mutable state. A compiled [Rules] is
// immutable and safe for concurrent use.
//
// # Rules
//
// Rules are tried in order; the first rule whose server glob, tool glob and
// every When predicate hold wins ([Rules.Decide]). No matching rule means no
// decision: the caller fails closed. [Rules.Exposable] ignores When and says
// whether a tool may be shown to the host at all.
//
// # Prompts and resources
//
// A rule names exactly one of tool, prompt and resource. Tool rules are
// the ones above ([Rules.Exposable], [Rules.Decide], [Rules.Explain] see
// only them). A prompt rule's prompt glob matches the upstream prompt name;
// its When predicates apply to the prompts/get arguments
// ([Rules.DecidePrompt]). A resource rule's resource pattern matches a URI
// ([Rules.DecideResource]) and has no When. Prompt and resource rules allow
// or deny (ask is refused: it is for tools). Their class is read unless
// they name another: a resource whose read queries a remote service may be
// "network", and then flows treat the read as a sink.
//
// # Labels and flows
//
// A rule may carry labels ([Match.Labels]): the caller adds them to the
// host's scope when a request the rule allows returns its result. A
// [Flows] says, for the labels a scope holds, what a request of a class
// gets: once a scope holds "private", a "network" call asks. Flows only
// make a decision stricter ([Flows.Check]): the stricter of the rule's
// action and every matching flow's wins.
//
// A resource pattern that starts with "file:" must be file:///PATH-GLOB, a
// path glob (see Path globs). Any other pattern is a glob (see Globs) over
// the whole URI; a scheme at its start is lowercased. A URI is matched in
// its normal form: its scheme lowercased, and for a file: URI "file://"
// followed by the percent-decoded, cleaned absolute path, so
// "file:///work/a/%2e%2e/../etc/passwd" is matched as "file:///etc/passwd"
// by every pattern, file: or not. A file: URI with a host other than
// localhost, with a query or fragment, whose path does not decode or is
// not absolute, or holding a NUL byte, has no normal form and matches no
// rule at all. Other schemes get no path treatment: ".." in an http: URI
// is matched as written.
//
// [Rules.ExposableTemplate] matches a resource template's text as if it
// were a URI, to decide whether the template is shown; what is read through
// it is decided on the URI actually read.
//
// # Globs
//
// Server and tool globs, and the glob predicate, match the whole string and use
// path.Match syntax: '*' any run of characters, '?' one rune, '[...]' a class
// ('[^...]' negates; ranges lo-hi), '\' escapes the next character. Unlike
// path.Match, '*' and '?' also match '/' (these are names and free strings,
// not paths). Stricter than path.Match, Compile refuses a class that starts
// with '!' (shell users mean negation, path.Match means a literal '!'; write
// '[^' or '[\!'), a reversed range such as [z-a], and invalid UTF-8.
//
// # Path globs
//
// The path predicate matches an argument that is an absolute path ('/'
// first), non-empty and free of NUL bytes; anything else never matches. The
// argument is cleaned with path.Clean before matching, so
// "/work/scratch/../../etc/passwd" is matched as "/etc/passwd", and
// "/work/scratch/x/" as "/work/scratch/x". Backslash in an argument is an
// ordinary character. The pattern must itself be absolute and clean
// (path.Clean leaves it unchanged). In a pattern, each '/'-separated segment
// is either "**", which matches zero or more whole segments, or a glob over
// exactly one segment ('*' and '?' never cross '/'; '*' also matches a
// leading '.'). Because "**" may match zero segments, "/work/scratch/**"
// matches "/work/scratch" itself and everything below it; write
// "/work/scratch/*/**" for strictly below. Matching is lexical: symbolic links
// are not resolved (that would need I/O).
//
// # Arguments
//
// Decide takes the argument document as decoded by encoding/json with
// UseNumber: objects are map[string]any, arrays []any, numbers json.Number
// (float64, int and int64 are also accepted). A predicate on a missing
// argument or on a value of the wrong type does not hold; only absent = true
// holds for a missing argument. JSON null is a value: it is present, and it
// satisfies no other predicate.
//
// Pointers are RFC 6901 JSON pointers: "" is the whole document, otherwise
// '/'-separated reference tokens with "~1" for '/' and "~0" for '~'. An array
// index is decimal without leading zeros; "-" never resolves.
//
// # Equality
//
// equals and one_of compare a string only with a string (bytewise, no Unicode
// normalisation), a bool only with a bool, and a number only with a number.
// Numbers compare exactly as decimals: an integer is its exact value, a float
// (on either side) is its shortest round-trip decimal, the one
// strconv.FormatFloat(f, 'g', -1, 64) prints, which is what the operator
// typed. So "1.0" and "1e0" equal 1, "-0" equals 0, "0.1" equals 0.1, and
// "9007199254740993" does not equal 9007199254740992.
package classify

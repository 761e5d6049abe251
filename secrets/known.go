package secrets

// Secret is a value mcp-guard passes to an upstream as a credential: an env
// or pass_env value, a header value, a token. Name is the variable or header
// name; Server is the configured server's name.
type Secret struct {
	Server, Name, Value string
}

// Ref names a secret without its value.
type Ref struct {
	Server, Name string
}

// Known is the set of known secrets, immutable once built.
type Known struct {
	list []Secret
}

// NewKnown builds the known set from list. Values shorter than MinLen are
// left out and returned in short, so the caller can warn naming them. A value
// listed twice is kept once, under the first name it was listed with.
func NewKnown(list []Secret) (k *Known, short []Ref) {
	k = &Known{}
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		if len(s.Value) < MinLen {
			short = append(short, Ref{s.Server, s.Name})
			continue
		}
		if seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		k.list = append(k.list, s)
	}
	return k, short
}

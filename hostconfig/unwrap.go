package hostconfig

import (
	"slices"
	"strings"
)

// Unwrapped is what Unwrap made of a file.
type Unwrapped struct {
	Bytes    []byte
	Restored []string // the entries put back
	Left     []string // the entries not put back, with why
}

// Unwrap puts back, in d, the original of each entry changes lists that is
// still as wrap wrote it (or, with force, whatever it is now). Every other
// byte of d stays.
func (d *Doc) Unwrap(changes []Change, force bool) *Unwrapped {
	u := &Unwrapped{}
	var edits []edit
	for _, c := range changes {
		label := strings.Join(append(append([]string(nil), c.Where...), c.Name), ".")
		i := slices.IndexFunc(d.Entries, func(e Entry) bool { return e.Name == c.Name && slices.Equal(e.Where, c.Where) })
		if i < 0 {
			u.Left = append(u.Left, label+" (it was removed since wrap)")
			continue
		}
		e := d.Entries[i]
		if !force && !sameJSON(d.Raw[e.start:e.end], []byte(c.Wrapped)) {
			u.Left = append(u.Left, label+" (it was changed since wrap; --force puts the original back anyway)")
			continue
		}
		edits = append(edits, edit{e.start, e.end, []byte(c.Original)})
		u.Restored = append(u.Restored, label)
	}
	u.Bytes = splice(d.Raw, edits)
	return u
}

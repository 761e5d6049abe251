package gate

import (
	"strings"
	"testing"
)

// Names that would be shown twice are all refused, never renamed or picked;
// invalid names are refused with the pattern where the kind has one.
func TestExposeAll_CollisionsAndInvalidNamesRefused(t *testing.T) {
	names := []string{"a__x", "a__dup", "a__dup", "a__has space", "a__" + strings.Repeat("y", 62)}
	var cands []nameCand
	for i, n := range names {
		cands = append(cands, nameCand{at: i, name: n})
	}
	refused := exposeAll("tool", cands, true)
	if _, ok := refused[0]; ok || len(refused) != 4 {
		t.Fatalf("refused %v; want all but a__x", refused)
	}
	var collided, invalid int
	for _, why := range refused {
		switch {
		case strings.Contains(why, "collides with another tool (2 tools share it)"):
			collided++
		case strings.Contains(why, "does not match"):
			invalid++
		}
	}
	if collided != 2 || invalid != 2 {
		t.Fatalf("refused %v; want both duplicates and both invalid names", refused)
	}
	// Host URIs have no pattern; they still collide.
	refused = exposeAll("resource", cands, false)
	if len(refused) != 2 || !strings.Contains(refused[1], "another resource") {
		t.Fatalf("resources refused %v; want only the two that collide", refused)
	}
}

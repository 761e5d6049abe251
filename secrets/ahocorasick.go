package secrets

// automaton is an Aho–Corasick matcher compiled to a full DFA over byte
// classes. Transitions are premultiplied state offsets (state*nclass); a
// negative entry ^t means state t has outputs, so the no-match path is one
// table load and one sign test per byte.
type automaton struct {
	cls    [256]uint8
	nclass int32
	next   []int32
	outs   [][]int32 // per state index: ids of the patterns ending there
	minLen int
}

// newAutomaton compiles pats; the id of pats[i] is i.
func newAutomaton(pats [][]byte) *automaton {
	a := &automaton{}
	var used [256]bool
	a.minLen = -1
	for _, p := range pats {
		for _, c := range p {
			used[c] = true
		}
		if a.minLen < 0 || len(p) < a.minLen {
			a.minLen = len(p)
		}
	}
	n := int32(1) // class 0: bytes no pattern holds
	for c := range used {
		if used[c] {
			a.cls[c] = uint8(n)
			n++
		}
	}
	a.nclass = n
	// Trie.
	gotoT := make([]int32, n) // state 0 row
	for i := range gotoT {
		gotoT[i] = -1
	}
	outs := [][]int32{nil}
	states := int32(1)
	for id, p := range pats {
		s := int32(0)
		for _, c := range p {
			k := s*n + int32(a.cls[c])
			if gotoT[k] < 0 {
				gotoT[k] = states
				states++
				for range n {
					gotoT = append(gotoT, -1)
				}
				outs = append(outs, nil)
			}
			s = gotoT[k]
		}
		outs[s] = append(outs[s], int32(id))
	}
	// Breadth-first: fail links, merged outputs, full transitions.
	fail := make([]int32, states)
	queue := make([]int32, 0, states)
	for c := range n {
		t := gotoT[c]
		if t < 0 {
			gotoT[c] = 0
			continue
		}
		fail[t] = 0
		queue = append(queue, t)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for c := range n {
			k := s*n + c
			t := gotoT[k]
			if t < 0 {
				gotoT[k] = gotoT[fail[s]*n+c]
				continue
			}
			f := gotoT[fail[s]*n+c]
			fail[t] = f
			outs[t] = append(outs[t], outs[f]...)
			queue = append(queue, t)
		}
	}
	a.next = make([]int32, len(gotoT))
	for k, t := range gotoT {
		v := t * n
		if len(outs[t]) > 0 {
			v = ^v
		}
		a.next[k] = v
	}
	a.outs = outs
	return a
}

// output lists the patterns ending in premultiplied state s.
func (a *automaton) output(s int32) []int32 { return a.outs[s/a.nclass] }

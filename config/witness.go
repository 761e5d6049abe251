package config

import (
	"fmt"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/witnessspec"
)

// Witness is the [ledger] witness settings in force.
type Witness struct {
	// Specs are the witnesses chain heads are committed to. Default is
	// true when [ledger] witness was not set and Specs is the platform's
	// default (witnessspec.Default); then it may be empty.
	Specs    []witnessspec.Spec
	Default  bool
	Every    int64         // witness_every (default 100)
	Interval time.Duration // witness_interval (default 10s)
	Required bool          // witness_required: serve refuses to start unreachable
}

// WitnessInForce is the [ledger] witness settings, defaults filled in.
func (c *Config) WitnessInForce() Witness { return c.witness }

const (
	defaultWitnessEvery    = 100
	defaultWitnessInterval = 10 * time.Second
)

func checkWitness(l LedgerConfig, env EnvFunc, errs []error) (Witness, []error) {
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	w := Witness{Every: defaultWitnessEvery, Interval: defaultWitnessInterval, Required: l.WitnessRequired}
	if l.Witness == nil {
		w.Specs, w.Default = witnessspec.Default(), true
	} else {
		seen := map[string]bool{}
		for i, s := range *l.Witness {
			spec, err := witnessspec.Parse(s)
			if err != nil {
				add("ledger.witness[%d]: %v", i+1, err)
				continue
			}
			if spec.Kind == witnessspec.File {
				p, err := ExpandPath(spec.Path, env)
				if err != nil {
					add("ledger.witness[%d]: %q: %v", i+1, s, err)
					continue
				}
				spec.Path = p
			}
			if seen[spec.String()] {
				add("ledger.witness[%d]: %q is named twice", i+1, s)
				continue
			}
			seen[spec.String()] = true
			w.Specs = append(w.Specs, spec)
		}
		if len(w.Specs) == 0 && len(*l.Witness) == 0 && l.WitnessRequired {
			add("ledger.witness_required: true, but ledger.witness is empty: name a witness (\"journal\", \"syslog\", \"file:PATH\") or set witness_required = false")
		}
	}
	if l.WitnessEvery != nil {
		if n := *l.WitnessEvery; n < 1 || n > 1_000_000 {
			add("ledger.witness_every: %d: want 1 to 1000000 events", n)
		} else {
			w.Every = n
		}
	}
	if l.WitnessInterval != nil {
		d, err := time.ParseDuration(*l.WitnessInterval)
		switch {
		case err != nil:
			add("ledger.witness_interval: %q: want a duration such as \"10s\"", *l.WitnessInterval)
		case d < 100*time.Millisecond || d > time.Hour:
			add("ledger.witness_interval: %q: want 100ms to 1h", *l.WitnessInterval)
		default:
			w.Interval = d
		}
	}
	return w, errs
}

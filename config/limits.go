package config

import (
	"fmt"
	"time"
)

// Limits are the limits in force, defaults filled in: the one place every
// limit of serve has its value (gate's session limits and holds, proxy's,
// each upstream's). A Limits not made by a Config starts from
// DefaultLimits.
type Limits struct {
	CallsPerSession       int64
	CallsPerToolPerMinute int64
	IdenticalCallRepeats  int64
	ConsecutiveDenials    int64
	PendingApprovals      int64
	ResultBytes           int64
	MessageBytes          int64
	CallTimeout           time.Duration
	ApprovalWait          time.Duration
	GrantTTL              time.Duration
	StartTimeout          time.Duration
	// What a server that keeps failing can drive (upstream.Backoff): the
	// first wait before it is started, listed or its stream opened again,
	// doubled with each failure in a row up to RetryWaitMax; and the
	// shortest gap between two listings its list_changed notices ask for,
	// doubled while they keep coming.
	RetryWait      time.Duration
	RetryWaitMax   time.Duration
	RelistInterval time.Duration
	// Fixed, not set in [limits]: the list pages and bytes (all pages
	// together) read of one listing, and a server's stderr log size
	// before it rotates.
	ListPages   int64
	ListBytes   int64
	StderrBytes int64
}

// Check reports a limit that is unset (zero or less): a Limits made
// neither by a Config nor from DefaultLimits, where a zero would be no
// limit at all, or none passing. Its users (proxy, upstream) refuse one.
func (l Limits) Check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"calls_per_session", l.CallsPerSession}, {"calls_per_tool_per_minute", l.CallsPerToolPerMinute},
		{"identical_call_repeats", l.IdenticalCallRepeats}, {"consecutive_denials", l.ConsecutiveDenials},
		{"pending_approvals", l.PendingApprovals}, {"result_bytes", l.ResultBytes}, {"message_bytes", l.MessageBytes},
		{"call_timeout", int64(l.CallTimeout)}, {"approval_wait", int64(l.ApprovalWait)}, {"grant_ttl", int64(l.GrantTTL)},
		{"start_timeout", int64(l.StartTimeout)}, {"retry_wait", int64(l.RetryWait)}, {"retry_wait_max", int64(l.RetryWaitMax)},
		{"relist_interval", int64(l.RelistInterval)}, {"list pages", l.ListPages}, {"list bytes", l.ListBytes}, {"stderr bytes", l.StderrBytes},
	} {
		if f.v <= 0 {
			return fmt.Errorf("config: limit %s is unset (start from DefaultLimits)", f.name)
		}
	}
	return nil
}

// defaultStartupWait is how long the host's initialize waits for upstreams
// when the config does not say.
const defaultStartupWait = 5 * time.Second

// DefaultLimits are the limits of a config that sets none.
func DefaultLimits() Limits {
	return Limits{
		CallsPerSession:       1000,
		CallsPerToolPerMinute: 60,
		IdenticalCallRepeats:  5,
		ConsecutiveDenials:    10,
		PendingApprovals:      8,
		ResultBytes:           1 << 20,
		MessageBytes:          4 << 20,
		CallTimeout:           120 * time.Second,
		ApprovalWait:          50 * time.Second,
		GrantTTL:              10 * time.Minute,
		StartTimeout:          60 * time.Second,
		RetryWait:             time.Second,
		RetryWaitMax:          time.Minute,
		RelistInterval:        time.Second,
		ListPages:             100,
		ListBytes:             16 << 20,
		StderrBytes:           4 << 20,
	}
}

// checkLimits fills in the limits set in [limits] over the defaults and
// appends to errs what it refuses.
func checkLimits(l LimitsConfig, errs []error) (Limits, []error) {
	out := DefaultLimits()
	num := func(name string, v *int64, dst *int64, max int64) {
		if v == nil {
			return
		}
		if *v <= 0 {
			errs = append(errs, fmt.Errorf("limits.%s: %d: must be at least 1 (0 does not mean unlimited; leave it out for the default %d)", name, *v, *dst))
			return
		}
		if *v > max {
			errs = append(errs, fmt.Errorf("limits.%s: %d: must be at most %d", name, *v, max))
			return
		}
		*dst = *v
	}
	dur := func(name string, v *string, dst *time.Duration, max time.Duration) {
		if v == nil {
			return
		}
		d, err := time.ParseDuration(*v)
		if err != nil {
			errs = append(errs, fmt.Errorf("limits.%s: %q: want a duration such as \"90s\" or \"5m\"", name, *v))
			return
		}
		if d <= 0 {
			errs = append(errs, fmt.Errorf("limits.%s: %q: must be positive", name, *v))
			return
		}
		if d > max {
			errs = append(errs, fmt.Errorf("limits.%s: %q: must be at most %s", name, *v, max))
			return
		}
		*dst = d
	}
	num("calls_per_session", l.CallsPerSession, &out.CallsPerSession, 1<<40)
	num("calls_per_tool_per_minute", l.CallsPerToolPerMinute, &out.CallsPerToolPerMinute, 1<<30)
	num("identical_call_repeats", l.IdenticalCallRepeats, &out.IdenticalCallRepeats, 1<<30)
	num("consecutive_denials", l.ConsecutiveDenials, &out.ConsecutiveDenials, 1<<30)
	num("pending_approvals", l.PendingApprovals, &out.PendingApprovals, 1024)
	num("result_bytes", l.ResultBytes, &out.ResultBytes, 1<<30)
	num("message_bytes", l.MessageBytes, &out.MessageBytes, 1<<30)
	dur("call_timeout", l.CallTimeout, &out.CallTimeout, 24*time.Hour)
	dur("approval_wait", l.ApprovalWait, &out.ApprovalWait, 24*time.Hour)
	dur("grant_ttl", l.GrantTTL, &out.GrantTTL, 30*24*time.Hour)
	dur("start_timeout", l.StartTimeout, &out.StartTimeout, time.Hour)
	dur("retry_wait", l.RetryWait, &out.RetryWait, time.Hour)
	dur("retry_wait_max", l.RetryWaitMax, &out.RetryWaitMax, 24*time.Hour)
	dur("relist_interval", l.RelistInterval, &out.RelistInterval, time.Hour)
	if out.RetryWait < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("limits.retry_wait: %s: must be at least 10ms", out.RetryWait))
	}
	if out.RelistInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("limits.relist_interval: %s: must be at least 10ms", out.RelistInterval))
	}
	if out.RetryWaitMax < out.RetryWait {
		errs = append(errs, fmt.Errorf("limits.retry_wait_max: %s: must be at least retry_wait (%s)", out.RetryWaitMax, out.RetryWait))
	}
	if out.MessageBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("limits.message_bytes: %d: must be at least 65536", out.MessageBytes))
	}
	return out, errs
}

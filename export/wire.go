package export

import (
	"math"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the OTLP protobuf messages (opentelemetry-proto v1).
const (
	fResourceLogs  = 1 // ExportLogsServiceRequest.resource_logs
	fResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fResource     = 1 // ResourceLogs/ResourceSpans.resource
	fScopeRecords = 2 // ResourceLogs.scope_logs, ResourceSpans.scope_spans
	fResourceAttr = 1 // Resource.attributes

	fScope        = 1 // ScopeLogs/ScopeSpans.scope
	fScopeItems   = 2 // ScopeLogs.log_records, ScopeSpans.spans
	fScopeName    = 1 // InstrumentationScope.name
	fScopeVersion = 2 // InstrumentationScope.version

	fLogTime         = 1  // LogRecord.time_unix_nano (fixed64)
	fLogSeverity     = 2  // LogRecord.severity_number
	fLogSeverityText = 3  // LogRecord.severity_text
	fLogBody         = 5  // LogRecord.body
	fLogAttr         = 6  // LogRecord.attributes
	fLogTraceID      = 9  // LogRecord.trace_id
	fLogSpanID       = 10 // LogRecord.span_id
	fLogObserved     = 11 // LogRecord.observed_time_unix_nano (fixed64)
	fLogEventName    = 12 // LogRecord.event_name

	fSpanTraceID = 1  // Span.trace_id
	fSpanID      = 2  // Span.span_id
	fSpanParent  = 4  // Span.parent_span_id
	fSpanName    = 5  // Span.name
	fSpanKind    = 6  // Span.kind
	fSpanStart   = 7  // Span.start_time_unix_nano (fixed64)
	fSpanEnd     = 8  // Span.end_time_unix_nano (fixed64)
	fSpanAttr    = 9  // Span.attributes
	fSpanStatus  = 15 // Span.status
	fStatusMsg   = 2  // Status.message
	fStatusCode  = 3  // Status.code

	fKey   = 1 // KeyValue.key
	fValue = 2 // KeyValue.value

	fString = 1 // AnyValue.string_value
	fBool   = 2 // AnyValue.bool_value
	fInt    = 3 // AnyValue.int_value
	fDouble = 4 // AnyValue.double_value
	fArray  = 5 // AnyValue.array_value
	fValues = 1 // ArrayValue.values
)

// Span kinds and status codes (opentelemetry-proto trace/v1).
const (
	spanInternal = 1
	spanServer   = 2
	spanClient   = 3

	statusUnset = 0
	statusOK    = 1
	statusError = 2
)

// Severity numbers (opentelemetry-proto logs/v1).
const (
	sevInfo  = 9
	sevWarn  = 13
	sevError = 17
)

// attr is one attribute: a string, int, bool, double or list of strings.
type attr struct {
	key  string
	kind byte // 's', 'i', 'b', 'd', 'l'
	s    string
	i    int64
	d    float64
	l    []string
}

func str(k, v string) attr       { return attr{key: k, kind: 's', s: v} }
func num(k string, v int64) attr { return attr{key: k, kind: 'i', i: v} }
func flag(k string, v bool) attr {
	var i int64
	if v {
		i = 1
	}
	return attr{key: k, kind: 'b', i: i}
}
func list(k string, v []string) attr { return attr{key: k, kind: 'l', l: v} }

// message appends a length-delimited field holding what body appends.
func message(b []byte, field protowire.Number, body func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	// Encode the body after a reserved one-byte length, then fix the
	// length up (moving the body when it needs more bytes).
	at := len(b)
	b = append(b, 0)
	b = body(b)
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size-1)...)
	copy(b[at+size:], b[at+1:at+1+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, validUTF8(s))
}

// validUTF8 is s with each invalid byte sequence replaced by U+FFFD: a
// protobuf string must be UTF-8, and a collector refuses the whole batch
// holding one that is not (arguments that were not JSON, say).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func appendBytes(b []byte, field protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendVarint(b []byte, field protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed64(b []byte, field protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, field, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}

// appendAnyString appends an AnyValue holding s as field.
func appendAnyString(b []byte, field protowire.Number, s string) []byte {
	return message(b, field, func(b []byte) []byte {
		b = protowire.AppendTag(b, fString, protowire.BytesType)
		return protowire.AppendString(b, validUTF8(s))
	})
}

// appendAttrs appends attrs as repeated KeyValue field.
func appendAttrs(b []byte, field protowire.Number, attrs []attr) []byte {
	for _, a := range attrs {
		b = message(b, field, func(b []byte) []byte {
			b = appendString(b, fKey, a.key)
			return message(b, fValue, func(b []byte) []byte { return appendAny(b, a) })
		})
	}
	return b
}

func appendAny(b []byte, a attr) []byte {
	switch a.kind {
	case 's':
		b = protowire.AppendTag(b, fString, protowire.BytesType)
		return protowire.AppendString(b, validUTF8(a.s))
	case 'i':
		b = protowire.AppendTag(b, fInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(a.i))
	case 'b':
		b = protowire.AppendTag(b, fBool, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(a.i))
	case 'd':
		b = protowire.AppendTag(b, fDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(a.d))
	case 'l':
		return message(b, fArray, func(b []byte) []byte {
			for _, s := range a.l {
				b = appendAnyString(b, fValues, s)
			}
			return b
		})
	}
	return b
}

// logRecord is one OTLP LogRecord.
type logRecord struct {
	time     uint64 // unix nanoseconds
	severity int
	sevText  string
	event    string // event_name
	body     string
	attrs    []attr
	traceID  []byte
	spanID   []byte
}

// span is one OTLP Span.
type span struct {
	traceID, spanID, parent []byte
	name                    string
	kind                    int
	start, end              uint64
	attrs                   []attr
	status                  int
	statusMsg               string
}

// scopeName is the instrumentation scope of everything mcp-guard exports.
const scopeName = "github.com/mcp-guard/mcp-guard"

func appendResource(b []byte, res []attr) []byte {
	return message(b, fResource, func(b []byte) []byte { return appendAttrs(b, fResourceAttr, res) })
}

func appendScope(b []byte, version string) []byte {
	return message(b, fScope, func(b []byte) []byte {
		b = appendString(b, fScopeName, scopeName)
		return appendString(b, fScopeVersion, version)
	})
}

// encodeLogs is an ExportLogsServiceRequest holding recs.
func encodeLogs(res []attr, version string, recs []logRecord) []byte {
	return message(nil, fResourceLogs, func(b []byte) []byte {
		b = appendResource(b, res)
		return message(b, fScopeRecords, func(b []byte) []byte {
			b = appendScope(b, version)
			for _, r := range recs {
				b = message(b, fScopeItems, func(b []byte) []byte {
					b = appendFixed64(b, fLogTime, r.time)
					b = appendVarint(b, fLogSeverity, uint64(r.severity))
					b = appendString(b, fLogSeverityText, r.sevText)
					if r.body != "" {
						b = appendAnyString(b, fLogBody, r.body)
					}
					b = appendAttrs(b, fLogAttr, r.attrs)
					b = appendBytes(b, fLogTraceID, r.traceID)
					b = appendBytes(b, fLogSpanID, r.spanID)
					b = appendFixed64(b, fLogObserved, r.time)
					return appendString(b, fLogEventName, r.event)
				})
			}
			return b
		})
	})
}

// encodeSpans is an ExportTraceServiceRequest holding spans.
func encodeSpans(res []attr, version string, spans []span) []byte {
	return message(nil, fResourceSpans, func(b []byte) []byte {
		b = appendResource(b, res)
		return message(b, fScopeRecords, func(b []byte) []byte {
			b = appendScope(b, version)
			for _, s := range spans {
				b = message(b, fScopeItems, func(b []byte) []byte {
					b = appendBytes(b, fSpanTraceID, s.traceID)
					b = appendBytes(b, fSpanID, s.spanID)
					b = appendBytes(b, fSpanParent, s.parent)
					b = appendString(b, fSpanName, s.name)
					b = appendVarint(b, fSpanKind, uint64(s.kind))
					b = appendFixed64(b, fSpanStart, s.start)
					b = appendFixed64(b, fSpanEnd, s.end)
					b = appendAttrs(b, fSpanAttr, s.attrs)
					if s.status != statusUnset || s.statusMsg != "" {
						b = message(b, fSpanStatus, func(b []byte) []byte {
							b = appendString(b, fStatusMsg, s.statusMsg)
							return appendVarint(b, fStatusCode, uint64(s.status))
						})
					}
					return b
				})
			}
			return b
		})
	})
}

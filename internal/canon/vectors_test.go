package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// goldenVector is one entry of testdata/golden.json. Input and Canonical
// hold JSON text; SHA256 is the lowercase hex SHA-256 of Canonical.
type goldenVector struct {
	Name      string `json:"name"`
	Input     string `json:"input"`
	Canonical string `json:"canonical"`
	SHA256    string `json:"sha256"`
}

// refusedVector is one entry of testdata/refused.json. Encoding "hex"
// means Input is hex-encoded bytes (for input that is not valid UTF-8);
// otherwise Input is the text itself.
type refusedVector struct {
	Name           string `json:"name"`
	Encoding       string `json:"encoding,omitempty"`
	Input          string `json:"input"`
	ReasonContains string `json:"reason_contains"`
}

func (v refusedVector) bytes(t testing.TB) []byte {
	switch v.Encoding {
	case "":
		return []byte(v.Input)
	case "hex":
		b, err := hex.DecodeString(v.Input)
		if err != nil {
			t.Fatalf("%s: bad hex input: %v", v.Name, err)
		}
		return b
	default:
		t.Fatalf("%s: unknown encoding %q", v.Name, v.Encoding)
		return nil
	}
}

func loadGolden(t testing.TB) []goldenVector {
	t.Helper()
	var vs []goldenVector
	loadJSON(t, "testdata/golden.json", &vs)
	if len(vs) == 0 {
		t.Fatal("testdata/golden.json has no vectors")
	}
	return vs
}

func loadRefused(t testing.TB) []refusedVector {
	t.Helper()
	var vs []refusedVector
	loadJSON(t, "testdata/refused.json", &vs)
	if len(vs) == 0 {
		t.Fatal("testdata/refused.json has no vectors")
	}
	return vs
}

func loadJSON(t testing.TB, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestGolden pins the canonical encoder byte for byte (SAFETY.md J2).
//
// To add a vector, write its name, input and canonical text with an empty
// "sha256"; this test then fails and prints the value to fill in. The hash
// is of the expected canonical text, not of what the encoder produced, so
// filling it in cannot paper over an encoder bug.
func TestGolden(t *testing.T) {
	var missing []string
	for _, v := range loadGolden(t) {
		t.Run(v.Name, func(t *testing.T) {
			want := []byte(v.Canonical)
			if v.SHA256 == "" {
				missing = append(missing, v.Name)
				t.Errorf("vector has no sha256; suggested value (sha256 of its canonical text):\n\t\"sha256\": %q", sha256Hex(want))
			} else if got := sha256Hex(want); got != v.SHA256 {
				t.Errorf("sha256 of the canonical text is %s, vector says %s", got, v.SHA256)
			}

			got, err := Canonical([]byte(v.Input))
			if err != nil {
				t.Fatalf("Canonical: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Canonical\n got %q\nwant %q", got, want)
			}
			d, err := Digest([]byte(v.Input))
			if err != nil {
				t.Fatalf("Digest: %v", err)
			}
			if v.SHA256 != "" && d != v.SHA256 {
				t.Errorf("Digest = %s, want %s", d, v.SHA256)
			}
			// The canonical form is itself strict input and a fixed point.
			again, err := Canonical(want)
			if err != nil {
				t.Fatalf("Canonical(canonical): %v", err)
			}
			if !bytes.Equal(again, want) {
				t.Errorf("Canonical is not idempotent: %q", again)
			}
		})
	}
	if len(missing) > 0 {
		t.Logf("vectors without sha256: %q", missing)
	}
}

// TestRefused checks that the strict reader refuses every class of input in
// SAFETY.md J1, and that nothing downstream of it accepts them either.
func TestRefused(t *testing.T) {
	for _, v := range loadRefused(t) {
		t.Run(v.Name, func(t *testing.T) {
			in := v.bytes(t)
			err := Check(in)
			if err == nil {
				t.Fatalf("Check accepted %q", in)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check error is %T, want *Error: %v", err, err)
			}
			if e.Offset < 0 || e.Offset > int64(len(in)) {
				t.Errorf("offset %d outside input of %d bytes", e.Offset, len(in))
			}
			if !strings.Contains(e.Reason, v.ReasonContains) {
				t.Errorf("reason %q does not contain %q", e.Reason, v.ReasonContains)
			}
			if _, err := Canonical(in); err == nil {
				t.Error("Canonical accepted it")
			}
			if _, err := Digest(in); err == nil {
				t.Error("Digest accepted it")
			}
			if _, err := Decode(in); err == nil || err.Error() != e.Error() {
				t.Errorf("Decode error %v, want %v", err, e)
			}
			if _, err := Marshal(json.RawMessage(in)); err == nil {
				t.Error("Marshal(RawMessage) accepted it")
			}
		})
	}
}

// TestVectorsDecodeMarshalRoundTrip: Decode then Marshal gives the same bytes
// as Canonical, for every golden input.
func TestVectorsDecodeMarshalRoundTrip(t *testing.T) {
	for _, v := range loadGolden(t) {
		t.Run(v.Name, func(t *testing.T) {
			val, err := Decode([]byte(v.Input))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			got, err := Marshal(val)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != v.Canonical {
				t.Fatalf("Marshal(Decode(input))\n got %q\nwant %q", got, v.Canonical)
			}
			got, err = Marshal(json.RawMessage(v.Input))
			if err != nil {
				t.Fatalf("Marshal(RawMessage): %v", err)
			}
			if string(got) != v.Canonical {
				t.Fatalf("Marshal(RawMessage(input))\n got %q\nwant %q", got, v.Canonical)
			}
		})
	}
}

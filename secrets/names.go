package secrets

import "strings"

// MinLen is the shortest value treated as a secret. Shorter values would
// redact ordinary text; the caller warns naming the variable, never the value.
const MinLen = 8

// secretWords are the underscore-separated words that make a name secret.
var secretWords = [...]string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "APIKEY"}

// secretSuffixes make a name secret when it ends in one of them.
var secretSuffixes = [...]string{"_KEY", "_AUTH", "_CREDENTIALS"}

// IsSecretName reports whether an environment variable's value is a secret:
// the name is listed in secretEnv, or it is not listed in publicEnv and has a
// whole underscore-separated word TOKEN, SECRET, PASSWORD, PASSWD, PASS, PWD
// or APIKEY, or ends in _KEY, _AUTH or _CREDENTIALS, in any case.
// GIT_AUTHOR_NAME is not one (AUTH is not a whole word there). A name in
// both lists is a secret: listing it in secret_env is the stronger claim.
func IsSecretName(name string, secretEnv, publicEnv []string) bool {
	for _, n := range secretEnv {
		if n == name {
			return true
		}
	}
	for _, n := range publicEnv {
		if n == name {
			return false
		}
	}
	up := strings.ToUpper(name)
	for _, s := range secretSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	for w := range strings.SplitSeq(up, "_") {
		for _, s := range secretWords {
			if w == s {
				return true
			}
		}
	}
	return false
}

package config

import "strings"

// unknownKeyFix returns the fix for an unknown key: the closest allowed
// name when it is close enough to be a typo, or else the list of allowed
// names.
func unknownKeyFix(parent, name string, allowed []string) string {
	if best := closest(strings.ToLower(name), allowed); best != "" {
		return "did you mean " + join(parent, best) + "?"
	}
	where := "at the top level"
	if parent != "" {
		where = "in " + parent
	}
	return "remove it; allowed " + where + ": " + strings.Join(allowed, ", ")
}

// closest returns the name of allowed closest to name when it is close enough to be a
// typo of it (fewer edits than a third of name's length, plus one), or "".
func closest(name string, allowed []string) string {
	best, bestDist := "", len(name)/3+1
	for _, a := range allowed {
		if d := distance(name, a); d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// distance is the Levenshtein distance between a and b, in bytes. Names
// are short (the caller bounds them), so the quadratic cost is small.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

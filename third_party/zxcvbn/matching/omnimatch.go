package matching

import (
	"regexp"
	"sync"

	"github.com/trustelem/zxcvbn/adjacency"
	"github.com/trustelem/zxcvbn/frequency"
	"github.com/trustelem/zxcvbn/match"
)

// formsservice: the ranked dictionaries (about 11 MB) are built at the first Omnimatch, not when the
// program starts: every process of the binary linked them, whether it ever judged a password or not
// (third_party/README.md).
var (
	loadDefaults               sync.Once
	defaultRankedDictionnaries dictionaryMatch
	defaultGraphs              []*adjacency.Graph
)

func Omnimatch(password string, userInputs []string) (matches []*match.Match) {
	loadDefaults.Do(func() {
		defaultRankedDictionnaries = loadDefaultDictionnaries()
		defaultGraphs = loadDefaultAdjacencyGraphs()
	})
	dictMatcher := defaultRankedDictionnaries.withDict("user_inputs", buildRankedDict(userInputs))

	matchers := []match.Matcher{
		dictMatcher,
		reverseDictionnaryMatch{dm: dictMatcher},
		l33tMatch{dm: dictMatcher, table: l33tTable},
		spatialMatch{graphs: defaultGraphs},
		repeatMatch{},
		sequenceMatch{},
		regexpMatch{regexes: defaultRegexpMatch},
		dateMatch{},
	}

	for _, m := range matchers {
		matches = append(matches, m.Matches(password)...)
	}
	match.Sort(matches)
	return matches
}

var (
	defaultRegexpMatch = []struct {
		Name   string
		Regexp *regexp.Regexp
	}{
		{
			Name:   "recent_year",
			Regexp: regexp.MustCompile(`19\d\d|200\d|201\d`),
		},
	}
	l33tTable = map[string][]string{
		"a": {"4", "@"},
		"b": {"8"},
		"c": {"(", "{", "[", "<"},
		"e": {"3"},
		"g": {"6", "9"},
		"i": {"1", "!", "|"},
		"l": {"1", "|", "7"},
		"o": {"0"},
		"s": {"$", "5"},
		"t": {"+", "7"},
		"x": {"%"},
		"z": {"2"},
	}
)

func loadDefaultDictionnaries() dictionaryMatch {
	rd := make(map[string]rankedDictionnary)
	for n, list := range frequency.Lists() {
		rd[n] = buildRankedDict(list)
	}
	return dictionaryMatch{
		rankedDictionaries: rd,
	}
}

func loadDefaultAdjacencyGraphs() []*adjacency.Graph {
	return []*adjacency.Graph{
		adjacency.Graphs["qwerty"],
		adjacency.Graphs["dvorak"],
		adjacency.Graphs["keypad"],
		adjacency.Graphs["mac_keypad"],
	}

}

package cdx

import (
	"fmt"
	"strings"
)

// Layout is the columns of a CDX line, named by the letters of a CDX
// header.
type Layout struct {
	letters string // "N b a m s k r M S V g"
	n       int    // columns
	cols    [nFields]int8
	urlCol  int8 // the column that takes extra fields (a URL with spaces), or -1
}

// The layouts of headerless files, by field count.
var (
	layoutCDX11  = mustLayout("N b a m s k r M S V g")
	layoutCDX10  = mustLayout("N b a m s k r M V g")
	layoutCDX9   = mustLayout("N b a m s k r V g")
	layoutCDX14  = mustLayout("N b a m s k r M S V g - - -")
	layoutNAS7   = mustLayout("A e b m n g v")
	layoutNAS8   = mustLayout("A e b m n g v c")
	layoutByCols = map[int]*Layout{7: layoutNAS7, 8: layoutNAS8, 9: layoutCDX9, 10: layoutCDX10, 11: layoutCDX11, 14: layoutCDX14}
)

func mustLayout(s string) *Layout {
	l, err := ParseLayout(s)
	if err != nil {
		panic(err)
	}
	return l
}

// ParseLayout parses the letters of a CDX header, with or without its
// leading " CDX": "N b a m s k r M S V g". A letter the package does not
// read (and "-") names a column that is kept as it is.
func ParseLayout(s string) (*Layout, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "CDX ")
	letters := strings.Fields(s)
	if len(letters) == 0 {
		return nil, fmt.Errorf("CDX layout %q: no fields", s)
	}
	l := &Layout{letters: strings.Join(letters, " "), n: len(letters), urlCol: -1}
	for f := range l.cols {
		l.cols[f] = -1
	}
	// Preferred letter first: a over A for the URL, and so on.
	pick := map[field]string{fURLKey: "N", fTimestamp: "b", fURL: "aA", fMIME: "m", fStatus: "s", fDigest: "kc", fLength: "Sn", fOffset: "Vv", fFilename: "g"}
	for f, choices := range pick {
		for _, c := range choices {
			if i := indexOf(letters, string(c)); i >= 0 {
				l.cols[f] = int8(i)
				break
			}
		}
	}
	if l.cols[fURLKey] < 0 {
		// NetarchiveSuite's layout has the URL as its key.
		l.cols[fURLKey] = l.cols[fURL]
	}
	for _, c := range []string{"a", "A"} {
		if i := indexOf(letters, c); i >= 0 {
			l.urlCol = int8(i)
			break
		}
	}
	if len(letters) > 127 {
		return nil, fmt.Errorf("CDX layout %q: too many fields", s)
	}
	return l, nil
}

func indexOf(letters []string, c string) int {
	for i, l := range letters {
		if l == c {
			return i
		}
	}
	return -1
}

// String is the layout's letters, as in a header after " CDX ".
func (l *Layout) String() string { return l.letters }

// Fields is the number of columns.
func (l *Layout) Fields() int { return l.n }

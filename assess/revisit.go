package assess

import (
	"fmt"
	"math"
)

// RevisitModel predicts the length, as stored, of the revisit record that
// would replace a response: its WARC header (the response's, with the
// Refers-To fields naming the original's URI and date added) and, as its
// block, the response's HTTP head; gzip-compressed as a member of its own
// in a .gz file. What varies most is the URI (it appears twice) and the
// HTTP head, which no index records: the model is a line in the URI's
// length, one for plain files and one for gzip ones.
type RevisitModel struct {
	Plain, Gzip Line
}

// Line is base + perByte * (length of the URI).
type Line struct {
	Base, PerByte float64
}

// DefaultRevisitModel is calibrated on the revisits this toolchain writes:
// for a generated collection (warcgen, 50 files, 4,667 revisits: gzip
// 506-589 bytes, fitted as 511 + 0.59/URI byte; plain 824-975, 808 +
// 1.18/URI byte) and for the real files of the test corpus
// (../shared/corpus, 46 revisits: gzip 650-818 bytes, plain 687-1071),
// whose HTTP heads are longer. The bases are between the two.
var DefaultRevisitModel = RevisitModel{Plain: Line{820, 1.2}, Gzip: Line{560, 0.6}}

// The range of revisit lengths, as multiples of the model's, that an
// estimate from the model alone states: the real files' revisits were
// 0.76 to 1.42 times the model's; real crawls hold longer HTTP heads
// (cookies, security policies) than the corpus, hence the wider top.
const (
	RevisitLow  = 0.75
	RevisitHigh = 2.0
)

// Length returns the predicted length of the revisit of a response with
// a URI of uriLen bytes, in a gzip file or not.
func (m RevisitModel) Length(uriLen int, gzip bool) int64 {
	l := m.Plain
	if gzip {
		l = m.Gzip
	}
	return int64(math.Round(l.Base + l.PerByte*float64(uriLen)))
}

func (m RevisitModel) String() string {
	return fmt.Sprintf("%.0f + %.2f bytes per URI byte in gzip files, %.0f + %.2f in plain ones",
		m.Gzip.Base, m.Gzip.PerByte, m.Plain.Base, m.Plain.PerByte)
}

// revisitFit fits a RevisitModel to the revisits a dry run measured,
// keeping a default's line for a kind of file with too few of them.
type revisitFit struct {
	plain, gzip lineFit
}

// minFit is the fewest revisits a fitted line rests on.
const minFit = 20

func (f *revisitFit) add(uriLen int, gzip bool, length int64) {
	if gzip {
		f.gzip.add(float64(uriLen), float64(length))
	} else {
		f.plain.add(float64(uriLen), float64(length))
	}
}

func (f *revisitFit) model(def RevisitModel) RevisitModel {
	return RevisitModel{Plain: f.plain.line(def.Plain), Gzip: f.gzip.line(def.Gzip)}
}

// lineFit is a least-squares line through points.
type lineFit struct {
	n, sx, sy, sxx, sxy float64
}

func (f *lineFit) add(x, y float64) {
	f.n++
	f.sx += x
	f.sy += y
	f.sxx += x * x
	f.sxy += x * y
}

// line is the fitted line, the mean alone when the x do not vary, or def
// with fewer than minFit points.
func (f *lineFit) line(def Line) Line {
	if f.n < minFit {
		return def
	}
	mx, my := f.sx/f.n, f.sy/f.n
	vx := f.sxx/f.n - mx*mx
	if vx < 1e-9 {
		return Line{Base: my}
	}
	b := (f.sxy/f.n - mx*my) / vx
	return Line{Base: my - b*mx, PerByte: b}
}

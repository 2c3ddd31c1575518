package assess

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// population is a collection reduced to what the estimator sees: payload
// classes, each with its copies per file and the saving of one copy.
type population struct {
	files   int
	classes []popClass
	// The true figures: duplicates and bytes saved.
	truth vec
}

type popClass struct {
	saving int64
	copies map[int]int64 // file -> copies
}

// scenario describes a population: how many payloads repeat, how often,
// and how their copies spread over files.
type scenario struct {
	name     string
	files    int
	records  int     // about
	dupRate  float64 // share of payloads that repeat
	pairs    bool    // every repeated payload has 2 copies (else a Zipf-like number)
	cross    float64 // share of the later copies put in another file than the first
	locality bool    // that other file is near the first (crawls revisit in order)
	spread   float64 // log-normal sigma of the savings
}

func (sc scenario) generate(seed uint64) *population {
	rng := rand.New(rand.NewPCG(seed, 99))
	pop := &population{files: sc.files}
	n := 0
	for n < sc.records {
		c := popClass{saving: int64(math.Exp(rng.NormFloat64()*sc.spread + 9)), copies: map[int]int64{}}
		k := 1
		if rng.Float64() < sc.dupRate {
			if sc.pairs {
				k = 2
			} else {
				k = min(1+int(math.Pow(rng.Float64(), -1/1.2)), 2000)
			}
		}
		first := rng.IntN(sc.files)
		for i := range k {
			f := first
			if i > 0 && rng.Float64() < sc.cross {
				if sc.locality {
					f = (first + int(rng.ExpFloat64()*float64(sc.files)/20)) % sc.files
				} else {
					f = rng.IntN(sc.files)
				}
			}
			c.copies[f]++
		}
		pop.classes = append(pop.classes, c)
		pop.truth = pop.truth.add(vec{float64(k - 1), float64(c.saving) * float64(k-1)})
		n += k
	}
	return pop
}

// sample draws n files at random and returns the estimator fed with what
// they hold.
func (pop *population) sample(rng *rand.Rand, n int) *FileSample {
	perm := rng.Perm(pop.files)
	index := map[int]int{}
	for i, f := range perm[:n] {
		index[f] = i
	}
	s, err := NewFileSample(pop.files, n)
	if err != nil {
		panic(err)
	}
	var parts []Part
	for _, c := range pop.classes {
		parts = parts[:0]
		for f, copies := range c.copies {
			if i, ok := index[f]; ok {
				parts = append(parts, Part{File: i, Copies: copies, Saving: copies * c.saving})
			}
		}
		slices.SortFunc(parts, func(a, b Part) int { return a.File - b.File })
		s.AddClass(c.saving, parts)
	}
	return s
}

// TestFileSampleBias draws many samples from populations of every shape
// the estimator must cope with and checks, for bytes saved and for
// duplicates, that the mean estimate is near the truth, that the 95%
// interval covers it in most samples, and (where duplicates span files)
// that the naive estimate, the sample's own duplication scaled up, would
// have been far off: the test proves the correction, not the sampling.
func TestFileSampleBias(t *testing.T) {
	cases := []struct {
		sc       scenario
		percent  float64
		bias     float64 // largest |mean/truth - 1| accepted
		coverage float64 // smallest share of intervals that must hold the truth
		naiveOff float64 // the naive estimate's mean must be below 1-naiveOff (0: not checked)
	}{
		// The jackknife's interval is short of 95% when a few files hold most
		// of the duplication (here up to 2,000 copies of a payload in one).
		{scenario{"within files only", 200, 200000, 0.4, false, 0, false, 1}, 20, 0.05, 0.8, 0},
		{scenario{"Zipf copies, half across files", 200, 200000, 0.35, false, 0.5, false, 1.2}, 20, 0.05, 0.85, 0.1},
		{scenario{"Zipf copies, 90% across files", 200, 200000, 0.35, false, 0.9, false, 1.2}, 20, 0.05, 0.85, 0.2},
		{scenario{"Zipf copies in nearby files", 200, 200000, 0.35, false, 0.9, true, 1.2}, 20, 0.05, 0.85, 0.2},
		{scenario{"pairs, half across files", 200, 200000, 0.4, true, 0.5, false, 0.5}, 20, 0.06, 0.85, 0.3},
		{scenario{"pairs, all across files", 200, 200000, 0.4, true, 1, false, 0.5}, 20, 0.08, 0.80, 0.6},
		{scenario{"Zipf copies, 90% across files, 10% sample", 300, 300000, 0.35, false, 0.9, false, 1.2}, 10, 0.12, 0.80, 0.3},
		{scenario{"pairs across files, 10% sample", 300, 300000, 0.4, true, 1, false, 0.5}, 10, 0.25, 0.6, 0.7},
		{scenario{"Zipf copies, half sample", 100, 100000, 0.35, false, 0.9, false, 1.2}, 50, 0.03, 0.85, 0.05},
		{scenario{"small collection: 4 of 20 files, pairs", 20, 20000, 0.4, true, 0.5, false, 0.5}, 20, 0.06, 0.8, 0.2},
		// Payloads held by more files than were read: no estimator is
		// unbiased for them, this one is low.
		{scenario{"small collection: 4 of 20 files, Zipf copies", 20, 20000, 0.35, false, 0.5, false, 1}, 20, 0.15, 0.8, 0.1},
		// Small samples: the estimate over-counts payloads held by many
		// files; the interval's other end makes up for it.
		{scenario{"Zipf copies, 5% sample", 1000, 500000, 0.35, false, 0.9, false, 1.2}, 5, 0.4, 0.85, 0.3},
		{scenario{"pairs, 5% sample", 1000, 500000, 0.4, true, 1, false, 0.5}, 5, 0.1, 0.8, 0.3},
	}
	const reps = 60
	for _, c := range cases {
		t.Run(c.sc.name, func(t *testing.T) {
			pop := c.sc.generate(1)
			rng := rand.New(rand.NewPCG(2, 3))
			n := int(math.Round(c.percent / 100 * float64(pop.files)))
			var mean, naive, covered, width vec
			for range reps {
				s := pop.sample(rng, n)
				est := s.Estimate(0.95)
				obs := s.Observed()
				for f := range nFigures {
					mean[f] += est[f].Value / pop.truth[f] / reps
					naive[f] += obs[f] * float64(pop.files) / float64(n) / pop.truth[f] / reps
					width[f] += (est[f].High - est[f].Low) / pop.truth[f] / reps
					if est[f].Low <= pop.truth[f] && pop.truth[f] <= est[f].High {
						covered[f] += 1.0 / reps
					}
				}
			}
			for f, name := range []string{"duplicates", "bytes saved"} {
				t.Logf("%s: mean estimate %.3f of the truth, naive %.3f; the interval, %.2f of the truth wide, covers it in %.0f%% of the samples",
					name, mean[f], naive[f], width[f], 100*covered[f])
				if math.Abs(mean[f]-1) > c.bias {
					t.Errorf("%s: mean estimate %.3f of the truth, want within %.2f", name, mean[f], c.bias)
				}
				if covered[f] < c.coverage {
					t.Errorf("%s: the interval held the truth in %.0f%% of the samples, want %.0f%%", name, 100*covered[f], 100*c.coverage)
				}
				if c.naiveOff > 0 && naive[f] > 1-c.naiveOff {
					t.Errorf("%s: the naive estimate is %.3f of the truth: the case does not test the correction", name, naive[f])
				}
			}
		})
	}
}

// TestFileSampleExact checks the cases the estimator must get exactly.
func TestFileSampleExact(t *testing.T) {
	type class struct {
		first int64
		parts []Part
	}
	cases := []struct {
		name         string
		files, n     int
		classes      []class
		value, width vec // width: High-Low, -1 for "more than 0"
	}{
		{"no duplicates: nothing to save, whatever the sample", 10, 3,
			[]class{{100, []Part{{0, 1, 100}}}, {200, []Part{{1, 1, 200}}}, {50, []Part{{2, 1, 50}}}},
			vec{0, 0}, vec{0, 0}},
		{"duplicates within files: the sample's scaled by N/n", 10, 2,
			[]class{{100, []Part{{0, 3, 300}}}, {40, []Part{{1, 2, 80}}}, {7, []Part{{1, 1, 7}}}},
			vec{(2 + 1) * 5, (200 + 40) * 5}, vec{-1, -1}},
		{"every file read: what was found, no range", 3, 3,
			[]class{{100, []Part{{0, 2, 200}, {1, 1, 100}}}, {10, []Part{{2, 1, 10}}}},
			vec{2, 200}, vec{0, 0}},
		{"one file read: no range", 5, 1,
			[]class{{100, []Part{{0, 2, 200}}}},
			vec{5, 500}, vec{0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewFileSample(c.files, c.n)
			if err != nil {
				t.Fatal(err)
			}
			for _, cl := range c.classes {
				s.AddClass(cl.first, cl.parts)
			}
			est := s.Estimate(0.95)
			for f := range nFigures {
				if math.Abs(est[f].Value-c.value[f]) > 1e-6 {
					t.Errorf("figure %d: %v, want %v", f, est[f].Value, c.value[f])
				}
				w := est[f].High - est[f].Low
				if c.width[f] < 0 && !(w > 0) || c.width[f] >= 0 && math.Abs(w-c.width[f]) > 1e-6 {
					t.Errorf("figure %d: interval %v to %v, want width %v", f, est[f].Low, est[f].High, c.width[f])
				}
				if est[f].Low > est[f].Value || est[f].High < est[f].Value || est[f].Low < est[f].Observed {
					t.Errorf("figure %d: %+v is not ordered", f, est[f])
				}
			}
		})
	}
	if _, err := NewFileSample(3, 4); err == nil {
		t.Error("a sample larger than the collection was accepted")
	}
}

// TestSmoothing checks the series chosen for samples of each size: its
// terms, the first ones whole, and its coefficients within their bound.
func TestSmoothing(t *testing.T) {
	cases := []struct {
		n, files     int
		terms, whole int
	}{
		{1000, 1000, 0, 0},
		{500, 1000, 2 + maxSmoothing, 2},
		{200, 1000, 2 + 4, 2},
		{100, 1000, 2 + 2, 2},
		{50, 1000, 2 + 1, 2},
		{10, 1000, 1 + 3, 1},
		{4, 20, 3, 2},
		{2, 20, 2, 1}, // no more terms than files read
		{1, 20, 1, 1},
	}
	for _, c := range cases {
		sr := smoothing(c.n, c.files, estimateWhole)
		if sr.terms() != c.terms {
			t.Errorf("%d of %d files: %d terms, want %d", c.n, c.files, sr.terms(), c.terms)
		}
		if c.terms == 0 {
			continue
		}
		coef := coefficients(c.n, c.files, sr.terms())
		whole := 0
		for g := 1; g <= sr.terms() && math.Abs(math.Abs(sr.weight[g])-coef[g]) < 1e-9*coef[g]; g++ {
			whole = g
		}
		if whole < c.whole {
			t.Errorf("%d of %d files: %d terms whole (%v), want %d", c.n, c.files, whole, sr.weight, c.whole)
		}
		for g := 1; g <= sr.terms(); g++ {
			if math.Abs(sr.weight[g]) > maxCoefficient*coef[1]*(1+1e-9) {
				t.Errorf("%d of %d files: coefficient %d is %v, above %v", c.n, c.files, g, sr.weight[g], maxCoefficient*coef[1])
			}
			if (sr.weight[g] > 0) != (g%2 == 1) {
				t.Errorf("%d of %d files: coefficient %d is %v: the signs alternate, + first", c.n, c.files, g, sr.weight[g])
			}
		}
	}
}

// TestCoefficients checks the series without smoothing on every
// population of a small collection: unbiased for the classes held by at
// most n files, whatever G.
func TestCoefficients(t *testing.T) {
	const files, n = 20, 4
	c := coefficients(n, files, n)
	hyper := func(g, held int) float64 { // P(g of the held files are read)
		return binomial(held, g) * binomial(files-held, n-g) / binomial(files, n)
	}
	for held := 1; held <= n; held++ {
		est := 0.0
		for g := 1; g <= min(held, n); g++ {
			sign := 1.0
			if g%2 == 0 {
				sign = -1
			}
			est += sign * c[g] * hyper(g, held)
		}
		if want := hyper(0, held); math.Abs(est-want) > 1e-9 {
			t.Errorf("a class held by %d files: expected unseen %v, want %v", held, est, want)
		}
	}
}

func TestStudentT(t *testing.T) {
	cases := []struct {
		conf float64
		df   int
		want float64
	}{{0.95, 1, 12.706}, {0.95, 9, 2.262}, {0.95, 30, 2.042}, {0.95, 40, 2.021}, {0.95, 120, 1.980}, {0.95, 100000, 1.960},
		{0.90, 5, 2.015}, {0.90, 60, 1.671}, {0.99, 100000, 2.576}, {0.95, 0, 0}}
	for _, c := range cases {
		if got := studentT(c.conf, c.df); math.Abs(got-c.want) > 0.002 {
			t.Errorf("t(%v, %d) = %.4f, want %.3f", c.conf, c.df, got, c.want)
		}
	}
}

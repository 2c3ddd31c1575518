package assess

import (
	"fmt"
	"math"
)

// The figures a FileSample estimates, as indexes of its vectors.
const (
	Duplicates = iota // records whose payload an earlier capture holds
	BytesSaved        // the bytes their revisits would save
	nFigures
)

// vec holds one value per figure.
type vec [nFigures]float64

func (v vec) add(w vec) vec {
	for i := range v {
		v[i] += w[i]
	}
	return v
}

func (v vec) sub(w vec) vec {
	for i := range v {
		v[i] -= w[i]
	}
	return v
}

// Part is the copies of one payload class in one file of the sample.
type Part struct {
	File   int   // the file's index in the sample, 0 to n-1
	Copies int64 // records of the class in the file
	// Saving is what the revisits of those records would save, were they
	// all duplicates: 0 for a record of an ARC file or one whose revisit
	// would not be smaller.
	Saving int64
}

// FileSample estimates what deduplicating a whole collection would find
// from the payload classes found in a simple random sample of its files
// (see the package documentation for the estimator and its bias).
//
// For a figure with weight w per record (1 for duplicates, the saving of
// its revisit for bytes saved), the collection's figure is
//
//	S = T - C,  T = sum of w over all records,  C = sum over payload classes of w of its first copy
//
// T is a sum over files, estimated without bias by T_s/p (p = n/N). C is
// a sum over classes, most of which a sample of files does not see: the
// classes found contribute their first copy's weight once (C_s), those
// not found are estimated by the Good-Toulmin series over Q_g, the
// weight of the classes found in exactly g sampled files, with binomial
// smoothing (Orlitsky, Suresh and Wu, PNAS 2016) that keeps its first
// term exact.
type FileSample struct {
	files, sampled int // N, n
	terms          int // of the series for the full sample; replicates have no more
	total, classes vec
	q              []vec // q[g], 1 <= g <= terms+1 (for the replicates); q[0] unused
	perFile        []fileTerms
}

// fileTerms are one sampled file's share of the sums: what leaving it out
// subtracts from T, and adds to C and Q (the jackknife's replicates).
type fileTerms struct {
	total, classes vec
	q              []vec
}

// NewFileSample returns an estimator for a sample of sampled files drawn
// at random from files.
func NewFileSample(files, sampled int) (*FileSample, error) {
	if sampled < 1 || files < sampled {
		return nil, fmt.Errorf("a sample of %d of %d files", sampled, files)
	}
	terms := max(smoothing(sampled, files, 1).terms(), smoothing(sampled, files, 2).terms())
	s := &FileSample{files: files, sampled: sampled, terms: terms, q: make([]vec, terms+2), perFile: make([]fileTerms, sampled)}
	for i := range s.perFile {
		s.perFile[i].q = make([]vec, terms+2)
	}
	return s, nil
}

// AddClass adds one payload class as the sample found it: the saving its
// first copy (the earliest capture read) would make as a revisit, and
// its copies in each sampled file holding any.
func (s *FileSample) AddClass(firstSaving int64, parts []Part) {
	g := len(parts)
	if g == 0 {
		return
	}
	first := vec{Duplicates: 1, BytesSaved: float64(firstSaving)}
	s.classes = s.classes.add(first)
	if g < len(s.q) {
		s.q[g] = s.q[g].add(first)
	}
	for _, p := range parts {
		w := vec{Duplicates: float64(p.Copies), BytesSaved: float64(p.Saving)}
		s.total = s.total.add(w)
		f := &s.perFile[p.File]
		f.total = f.total.add(w)
		// Without this file the class is found in g-1 files, or not at all.
		if g < len(f.q) {
			f.q[g] = f.q[g].sub(first)
		}
		if g == 1 {
			f.classes = f.classes.sub(first)
		} else if g-1 < len(f.q) {
			f.q[g-1] = f.q[g-1].add(first)
		}
	}
}

// Observed is what the sample itself holds: the duplicates found among
// the files read and the bytes their revisits would save. The whole
// collection holds at least as much.
func (s *FileSample) Observed() vec { return s.total.sub(s.classes) }

// estimate is the estimator for a sample of n files with the given sums,
// the series' first terms kept whole.
func (s *FileSample) estimate(n int, total, classes vec, q []vec, whole int) vec {
	p := float64(n) / float64(s.files)
	sr := smoothing(n, s.files, whole)
	if sr.terms() > s.terms {
		sr.weight = sr.weight[:s.terms+1]
	}
	var out vec
	for f := range out {
		out[f] = total[f]/p - classes[f] - sr.unseen(q, f)
	}
	return out
}

// Interval is an estimate with the range within which the figure lies
// with the stated confidence.
type Interval struct {
	Value, Low, High float64
	// Observed is the figure found in the sample itself, a floor for
	// the others.
	Observed float64
}

// The two truncations of the series whose estimates the interval spans:
// two terms kept whole (the estimate) and one. Keeping the second term
// whole counts exactly the payloads held by two files, the commonest
// copies across files, and over-counts, in small samples, those held by
// many; keeping one under-counts the first. The truth lies between them
// in every population simulated (TestFileSampleBias).
const (
	estimateWhole = 2
	altWhole      = 1
)

// Estimate returns the estimate of each figure with its interval at the
// confidence level (e.g. 0.95). The interval spans both truncations of
// the series, each plus or minus Student's t for n-1 degrees of freedom
// times its delete-one-file jackknife standard error (with the finite
// population correction), none of it below what the sample itself holds.
// A sample of one file, or of every file, has no range.
func (s *FileSample) Estimate(confidence float64) [nFigures]Interval {
	wholes := [2]int{estimateWhole, altWhole}
	var value, se [2]vec
	for i, w := range wholes {
		value[i] = s.estimate(s.sampled, s.total, s.classes, s.q, w)
	}
	n := s.sampled
	if n >= 2 && n < s.files {
		reps := make([][2]vec, n)
		var mean [2]vec
		q := make([]vec, len(s.q))
		for j := range s.perFile {
			f := &s.perFile[j]
			for g := range q {
				q[g] = s.q[g].add(f.q[g])
			}
			for i, w := range wholes {
				reps[j][i] = s.estimate(n-1, s.total.sub(f.total), s.classes.add(f.classes), q, w)
				mean[i] = mean[i].add(reps[j][i])
			}
		}
		fpc := 1 - float64(n)/float64(s.files)
		for i := range wholes {
			for f := range nFigures {
				m := mean[i][f] / float64(n)
				var ss float64
				for _, r := range reps {
					ss += (r[i][f] - m) * (r[i][f] - m)
				}
				se[i][f] = math.Sqrt(fpc * float64(n-1) / float64(n) * ss)
			}
		}
	}
	z := studentT(confidence, n-1)
	observed := s.Observed()
	var out [nFigures]Interval
	for f := range out {
		v := max(value[0][f], observed[f])
		lo := min(value[0][f]-z*se[0][f], value[1][f]-z*se[1][f])
		hi := max(value[0][f]+z*se[0][f], value[1][f]+z*se[1][f])
		if n < 2 || n == s.files {
			lo, hi = v, v
		}
		out[f] = Interval{Value: v, Low: max(lo, observed[f]), High: max(hi, v), Observed: observed[f]}
	}
	return out
}

// spread is t, the ratio of files not read to files read.
func spread(n, files int) float64 { return float64(files-n) / float64(n) }

// maxSmoothing bounds the smoothed terms of the series; maxCoefficient
// bounds their coefficients, relative to the first term's t: the larger
// the coefficients, the more the estimate varies with the few classes
// found in many sampled files. Both were chosen by simulation
// (TestFileSampleBias).
const (
	maxSmoothing   = 20
	maxCoefficient = 50
)

// series is the smoothed Good-Toulmin series of a sample of n of N
// files: weight[g] is its g-th coefficient times P(L >= g), L = whole +
// Binomial(k, q), q = 2/(t+2), t = (N-n)/n.
//
// The coefficients are those of the estimator that is unbiased for a
// simple random sample of files (Goodman 1949, the number of classes of a
// finite population): a class held by G files is missed with probability
// C(N-G, n)/C(N, n), and
//
//	sum over g of (-1)^(g+1) c_g P(g of its G files read) = C(N-G, n)/C(N, n),  c_g = prod_{i<g} (N-n+i)/(n-i)
//
// for every G <= n. c_g is close to t^g, Good and Toulmin's coefficient
// for files drawn independently, when N is large, but not for a small
// collection: with 4 of 20 files read, c_2 is 1.42 t^2.
type series struct {
	weight []float64 // index 0 unused
}

// terms is the number of terms, the largest g with a weight.
func (s series) terms() int { return len(s.weight) - 1 }

// unseen is the series over q[1..terms()]: the estimated weight of the
// classes no sampled file holds.
func (s series) unseen(q []vec, f int) float64 {
	u := 0.0
	for g := 1; g <= s.terms(); g++ {
		u += s.weight[g] * q[g][f]
	}
	return u
}

// coefficients returns c_1, ..., c_max for a sample of n of N files
// (max <= n), unsigned, index 0 unused.
func coefficients(n, files, last int) []float64 {
	c := make([]float64, last+1)
	c[0] = 1
	for g := 1; g <= last; g++ {
		c[g] = c[g-1] * float64(files-n+g-1) / float64(n-g+1)
	}
	return c
}

// smoothing returns the series for a sample of n of N files with its
// first terms kept whole (fewer if their coefficients would exceed the
// bound), then k smoothed ones, k the largest (up to maxSmoothing) whose
// coefficients c_g P(L >= g) stay within maxCoefficient*c_1. The series
// has at most n terms: no class is found in more files than were read.
func smoothing(n, files, whole int) series {
	if n >= files {
		return series{weight: []float64{0}}
	}
	t := spread(n, files)
	last := min(n, whole+maxSmoothing)
	c := coefficients(n, files, last)
	whole = min(whole, last)
	for whole > 1 && c[whole] > maxCoefficient*c[1]*(1+1e-9) {
		whole--
	}
	q := 2 / (t + 2)
	best := smoothingTail(whole, 0, q)
	for k := 1; whole+k <= last; k++ {
		tail := smoothingTail(whole, k, q)
		worst := 0.0
		for g := 1; g < len(tail); g++ {
			worst = max(worst, c[g]*tail[g])
		}
		if worst > maxCoefficient*c[1]*(1+1e-9) {
			break
		}
		best = tail
	}
	w := make([]float64, len(best))
	for g := 1; g < len(w); g++ {
		w[g] = c[g] * best[g]
		if g%2 == 0 {
			w[g] = -w[g]
		}
	}
	return series{weight: w}
}

// smoothingTail returns P(whole + Binomial(k, q) >= g) for g from 0 to
// whole+k.
func smoothingTail(whole, k int, q float64) []float64 {
	pmf := make([]float64, k+1)
	for j := range pmf {
		pmf[j] = binomial(k, j) * math.Pow(q, float64(j)) * math.Pow(1-q, float64(k-j))
	}
	tail := make([]float64, whole+k+1)
	for g := 0; g <= whole; g++ {
		tail[g] = 1
	}
	acc := 0.0
	for g := whole + k; g > whole; g-- {
		acc += pmf[g-whole]
		tail[g] = min(acc, 1)
	}
	return tail
}

func binomial(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// studentT is the two-sided quantile of Student's t distribution with df
// degrees of freedom for the confidence level (0.95 or 0.90; others use
// the normal quantile), the factor of a standard error.
func studentT(confidence float64, df int) float64 {
	if df < 1 {
		return 0
	}
	// Quantiles 0.975 and 0.95 for df 1 to 30.
	t975 := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	t95 := [...]float64{6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
		1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
		1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697}
	var z float64
	var table []float64
	switch {
	case math.Abs(confidence-0.95) < 1e-9:
		z, table = 1.959964, t975[:]
	case math.Abs(confidence-0.90) < 1e-9:
		z, table = 1.644854, t95[:]
	default:
		return normalQuantile(1 - (1-confidence)/2)
	}
	if df <= len(table) {
		return table[df-1]
	}
	// Cornish-Fisher expansion: within 0.001 of the table beyond 30.
	d := float64(df)
	return z + (z*z*z+z)/(4*d) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*d*d)
}

// normalQuantile inverts the standard normal distribution function by
// bisection on math.Erf (a rarely used path: confidence levels other than
// 0.90 and 0.95).
func normalQuantile(p float64) float64 {
	lo, hi := -10.0, 10.0
	for range 100 {
		mid := (lo + hi) / 2
		if 0.5*(1+math.Erf(mid/math.Sqrt2)) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

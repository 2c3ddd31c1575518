// Package assess estimates what deduplicating a collection would save
// before anything is rewritten: warcdedup assess --sample (from a random
// sample of the payload digests, or of the files) and --cdx (from CDX/CDXJ
// indexes alone). Without either, warcdedup assess is the dry run of
// package dedup, exact.
//
// # Which sample
//
// A sample of files costs a share of the reading; a sample of digests
// costs the hashing of every file (the first stage of a run, which is
// most of a dry run's reading) and a share of the rest (resolution, the
// revisits built). What they can tell differs more than what they cost:
// the range of a file sample comes from the spread between the files read,
// and with few of them it is too wide to decide with (from 4 of the 16
// files of a generated 1 GB collection: bytes saved estimated 579 MB,
// between 132 MB and 1.0 GB, the truth 410 MB); that of a digest sample
// comes from the thousands of payloads sampled. SampleAuto draws files
// when the sample holds MinFileSample files or more, digests otherwise;
// --sample-by chooses. scripts/bench-assess-sample.sh measures both.
//
// # From a sample of the digests
//
// SampleDigests runs the dry run of the whole job with a DigestSlice
// (package dedup): every file is hashed and its listing sorted as a run's,
// and only the payloads of the slice (Slice: a hash of the seed and the
// digest below P% of its range, and every payload of AlwaysProven bytes
// or more) are resolved byte for byte and their revisits built. The
// listing, joined with each response's status and media type (the facts
// the hash stage writes), predicts every payload's figures; the slice
// measures how the truth differs from the prediction; DigestSample adds
// the difference, weighted by each payload's inclusion probability, to
// the prediction (a difference estimator, unbiased whatever the
// prediction). Its variance is the Horvitz-Thompson variance of the
// differences, estimated from the slice; the interval uses Student's t
// with the effective number of the variance's terms as degrees of freedom
// (few payloads making most of it widen it), and is never narrower than
// what mispredicting the payloads outside the slice as often as the slice
// allows would make (-ln(1-confidence) over the payloads drawn).
//
// What the listing cannot predict is what the residual holds: a hash
// collision, byte-identical captures that the replay policy keeps apart
// by a header the listing does not carry (Content-Encoding,
// Transfer-Encoding, Content-Disposition, Location, WARC/0.x against
// WARC/1.x), a revisit whose length the RevisitModel misjudges or that
// would not be smaller. Measured by scripts/bench-assess-sample.sh on
// generated collections of about 1 GB in 16 files, at 25%, 90% ranges,
// seeds 1 to 10 (see warcdedup-assess(1) for the figures).
//
// # From a sample of the files
//
// Sample draws n of the collection's N files at random (ChooseFiles,
// deterministic for a seed) and runs the whole job on them as a dry run:
// hashing, byte-for-byte resolution, revisits built and measured. What
// the files read hold is found exactly; what the others hold is
// estimated, and that is where a file sample differs from a sample of
// independent records. A payload's copies lie in several files: one whose
// copies are all in files not read is missed, and one seen in a single
// file read may have copies in others. Scaling the sample's own
// duplication by N/n is biased low, the more so as copies spread over
// files: simulated, 60% to 80% of the truth for payloads with
// Zipf-distributed copies, 20% when payloads repeat in pairs across files
// (TestFileSampleBias).
//
// FileSample writes each figure (duplicates: weight 1 a record; bytes
// saved: the saving of its revisit) as S = T - C, T the weight of every
// record, C the weight of the first copy of every payload class. T is a
// sum over files: T_s N/n is unbiased. C is a sum over classes: the
// classes found count once (C_s); those no file read holds are estimated
// by the Good-Toulmin series over Q_g, the weight of the classes found in
// exactly g files, with the coefficients that make it unbiased for a
// simple random sample of files from a finite collection (Goodman 1949)
// for every class held by at most n files. Unsmoothed its variance
// explodes (its coefficients grow like ((N-n)/n)^g); the first two terms
// are kept whole and the rest damped with binomial weights (Orlitsky,
// Suresh and Wu, PNAS 2016), as far as the coefficients stay within 50
// times the first. Keeping the second term whole counts payloads held by
// two files exactly (the commonest copies across files); it over-counts,
// in small samples, those held by many, which keeping one term whole
// under-counts.
//
// The bias left, measured by TestFileSampleBias over simulated
// collections of 200 to 1,000 files: within 1% at 20% samples and for
// pairs at any size down to 5%; +9% at 10% and +30% at 5% when payloads
// have Zipf-distributed copies across files; -11% when 4 of 20 files are
// read and payloads are held by more files than that. The interval spans
// the estimates with one and with two terms kept whole, each plus or
// minus Student's t times its delete-one-file jackknife standard error
// (with the finite population correction), and never goes below what the
// files read hold. It held the truth in 80% to 100% of the simulated
// samples; the jackknife is short when a few files hold most of the
// duplication. With few files read (under ten) the range is wide, and
// figures dominated by a few large payloads vary most.
//
// The first copy of a class was not rewritten by the dry run: its
// revisit's length is the mean of those built for its copies, or the
// RevisitModel fitted to the revisits built.
//
// # From indexes
//
// Index reads CDX and CDXJ lines (package cdx), keeps each 2xx response
// (but 206) with a digest and a length, writes it in a form that sorts by
// digest and capture time into the work directory, has the system sort
// order it, and reads it once: the earliest capture of each digest (and,
// under the replay policy, status, MIME type and container) is the
// original, every later one a duplicate, saving its length less the
// RevisitModel's revisit length, if that is smaller and the file is no ARC
// file. The digests are trusted, not verified; revisit lines, other
// statuses, lines without digest, length or file name, and records listed
// twice are left out and counted; a line that cannot be read is named and
// makes the exit status 1. Memory holds the breakdowns (bounded as a
// run's are) and the file names (up to maxFiles).
package assess

package replaycheck

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/dedup"
	"warcdedup/digest"
	"warcdedup/internal/progress"
	"warcdedup/policy"
	"warcdedup/record"
	"warcdedup/scripts/gen"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// deduplicated makes a collection, runs the job on it and writes a CDXJ
// index of the result; it returns the collection, the log and the index.
func deduplicated(t *testing.T) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	coll, wd := filepath.Join(dir, "coll"), filepath.Join(dir, "work")
	_, err := gen.Write(coll, gen.Config{Files: 4, Records: 300, DupRate: 0.4, Seed: 3, MeanPayload: 3 << 10,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11}, NonCandidates: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{coll}, WorkDir: wd, Jobs: 2, Algorithm: digest.SHA1,
		Policy: policy.Replay, Display: progress.NewPlain(io.Discard, "test")})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("job: %v", err)
	}
	index := filepath.Join(dir, "index.cdxj")
	writeIndex(t, coll, index)
	return coll, filepath.Join(wd, workdir.LogFile), index
}

// writeIndex writes a CDXJ line per response and revisit of the
// collection, as warcio.js would (url as urlkey: lookups go by URL).
func writeIndex(t *testing.T, coll, name string) {
	t.Helper()
	ins, err := warcsum.Collect([]string{coll}, true)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, in := range ins {
		f, err := os.Open(in.Path)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := record.NewReader(f, in.Name)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := rr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Type != "response" && rec.Type != "revisit" {
				continue
			}
			mime := "text/html"
			if rec.Type == "revisit" {
				mime = "warc/revisit"
			}
			off := rec.Offset
			rr.Finish()
			d := rec.Header.Get("WARC-Payload-Digest")
			j, _ := json.Marshal(map[string]string{"url": rec.TargetURI(), "mime": mime, "digest": strings.TrimPrefix(d, "sha1:"),
				"offset": fmt.Sprint(off), "length": fmt.Sprint(rec.Length), "filename": in.Name})
			fmt.Fprintf(&b, "%s %s %s\n", rec.TargetURI(), timestamp(rec.Date), j)
		}
		f.Close()
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckSample(t *testing.T) {
	coll, log, index := deduplicated(t)
	opt := Options{Collection: coll, Log: log, Indexes: []string{index}, Sample: 25, Seed: 1}
	res, err := Check(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sampled != 25 || res.Replay != 25 || res.Live < 50 {
		for _, r := range res.Revisits {
			if !r.OK {
				t.Log(r.Problem)
			}
		}
		t.Fatalf("%d of %d live revisits sampled, %d replay", res.Sampled, res.Live, res.Replay)
	}
	again, _ := Check(context.Background(), opt)
	opt.Seed = 2
	other, _ := Check(context.Background(), opt)
	if key(again) != key(res) {
		t.Error("the same seed drew another sample")
	}
	if key(other) == key(res) {
		t.Error("another seed drew the same sample")
	}
	for _, r := range res.Revisits {
		if r.Original == nil || r.Original.Payload == 0 || r.Original.Lookup == "" {
			t.Errorf("%s %d: %+v", r.File, r.Offset, r.Original)
		}
	}
}

func key(r *Result) string {
	var b strings.Builder
	for _, v := range r.Revisits {
		fmt.Fprintf(&b, "%s:%d ", v.File, v.Offset)
	}
	return b.String()
}

// TestCheckFindsWhatDoesNotReplay: an original whose payload changed after
// the job, and an index that lacks an original, are each reported for the
// revisits that need them.
func TestCheckFindsWhatDoesNotReplay(t *testing.T) {
	coll, log, index := deduplicated(t)
	all, err := Check(context.Background(), Options{Collection: coll, Log: log, Indexes: []string{index}})
	if err != nil || all.Failed != 0 {
		t.Fatalf("%v, %d fail", err, all.Failed)
	}
	victim := all.Revisits[0].Original
	// A byte of the original's payload changed (a plain file, so the
	// record still reads): find it in a .warc file's revisit's original.
	for _, r := range all.Revisits {
		if strings.HasSuffix(r.Original.File, ".warc") {
			victim = r.Original
			break
		}
	}
	name := filepath.Join(coll, victim.File)
	b, _ := os.ReadFile(name)
	end := victim.Offset + int64(strings.Index(string(b[victim.Offset:]), "\r\n\r\n"))
	end += int64(strings.Index(string(b[end+4:]), "\r\n\r\n")) + 4 + 4 + 2 // into the payload
	b[end] ^= 0x20
	os.WriteFile(name, b, 0o644)
	res, err := Check(context.Background(), Options{Collection: coll, Log: log, Indexes: []string{index}})
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, r := range res.Revisits {
		if !r.OK {
			bad++
			if !strings.Contains(r.Problem, victim.File) {
				t.Errorf("the problem does not name the original: %s", r.Problem)
			}
		}
	}
	if bad == 0 || res.Failed != bad {
		t.Errorf("a changed original: %d revisits reported", bad)
	}
	b[end] ^= 0x20
	os.WriteFile(name, b, 0o644)

	// The index without the original's line.
	idx, _ := os.ReadFile(index)
	var kept []string
	for _, l := range strings.Split(strings.TrimSuffix(string(idx), "\n"), "\n") {
		if !strings.Contains(l, fmt.Sprintf(`"offset":"%d"`, victim.Offset)) || !strings.Contains(l, victim.File) {
			kept = append(kept, l)
		}
	}
	os.WriteFile(index, []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	res, _ = Check(context.Background(), Options{Collection: coll, Log: log, Indexes: []string{index}})
	if res.Failed == 0 {
		t.Error("an index without the original: nothing reported")
	}
}

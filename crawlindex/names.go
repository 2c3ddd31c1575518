package crawlindex

import (
	"encoding/json"
	"unicode/utf8"
)

// File names and locations are bytes, and a JSON string can hold only
// UTF-8: encoding/json writes U+FFFD for each other byte, after which the
// file is not found under the name recorded. A value that is UTF-8 is
// written as the JSON string it always was (indexes written before read
// the same); any other as an object holding its bytes in base64,
// {"base64": "..."}, which an older warcdedup refuses to read rather than
// taking another name.
type text string

type textBytes struct {
	Base64 []byte `json:"base64"`
}

func (t text) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(t)) {
		return json.Marshal(string(t))
	}
	return json.Marshal(textBytes{[]byte(t)})
}

func (t *text) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '{' {
		var b textBytes
		if err := json.Unmarshal(data, &b); err != nil {
			return err
		}
		*t = text(b.Base64)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*t = text(s)
	return nil
}

// MarshalJSON writes the file's name as the bytes it is (see text).
func (f FileInfo) MarshalJSON() ([]byte, error) {
	type plain FileInfo
	return json.Marshal(struct {
		Name text `json:"name"`
		plain
	}{text(f.Name), plain(f)})
}

func (f *FileInfo) UnmarshalJSON(data []byte) error {
	type plain FileInfo
	v := struct {
		Name text `json:"name"`
		*plain
	}{plain: (*plain)(f)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	f.Name = string(v.Name)
	return nil
}

// MarshalJSON writes the crawl's location and log as the bytes they are
// (see text).
func (c Crawl) MarshalJSON() ([]byte, error) {
	type plain Crawl
	return json.Marshal(struct {
		plain
		Location text `json:"location"`
		Log      text `json:"log,omitempty"`
	}{plain(c), text(c.Location), text(c.Log)})
}

func (c *Crawl) UnmarshalJSON(data []byte) error {
	type plain Crawl
	v := struct {
		*plain
		Location text `json:"location"`
		Log      text `json:"log"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	c.Location, c.Log = string(v.Location), string(v.Log)
	return nil
}

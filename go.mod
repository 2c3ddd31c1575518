module warcdedup

go 1.26.8

require (
	github.com/klauspost/compress v1.20.3
	github.com/urfave/cli/v2 v2.27.7
	github.com/zeebo/blake3 v0.2.4
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/klauspost/cpuid/v2 v2.0.12 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
)

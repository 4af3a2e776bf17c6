module github.com/redmux/redmux

go 1.24

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/stretchr/testify v1.12.1
	github.com/tidwall/redcon v1.6.2
	github.com/yuin/gopher-lua v1.1.2
	golang.org/x/perf v0.0.0-20230113213139-801c7ef9e5c5
	golang.org/x/sys v0.35.0
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

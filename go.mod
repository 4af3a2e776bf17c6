module github.com/redmux/redmux

go 1.24

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	github.com/stretchr/testify v1.12.1
	github.com/tidwall/redcon v1.6.2
	github.com/yuin/gopher-lua v1.1.2
	golang.org/x/sys v0.35.0
)

require (
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

module github.com/redmux/redmux

go 1.24

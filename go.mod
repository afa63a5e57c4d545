module github.com/matchlog/matchlog

go 1.26

require (
	github.com/HdrHistogram/hdrhistogram-go v1.2.0
	github.com/google/btree v1.1.3
	github.com/lirm/aeron-go v0.0.0-20240606170339-8b05ad14e456
	github.com/tidwall/btree v1.8.2
	golang.org/x/sys v0.17.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/edsrzf/mmap-go v1.1.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/stretchr/objx v0.5.2 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.26.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

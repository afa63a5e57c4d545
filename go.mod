module github.com/matchlog/matchlog

go 1.26

require (
	github.com/google/btree v1.1.3
	github.com/lirm/aeron-go v0.0.0-20240606170339-8b05ad14e456
	github.com/tidwall/btree v1.8.2
)

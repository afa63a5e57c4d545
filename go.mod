module github.com/matchlog/matchlog

go 1.26

require (
	github.com/google/btree v1.1.3
	github.com/tidwall/btree v1.8.2
)

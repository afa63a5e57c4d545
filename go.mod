module github.com/matchlog/matchlog

go 1.26

require github.com/google/btree v1.1.3 // indirect

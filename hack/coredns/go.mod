module switchyard.local/coredns

go 1.26

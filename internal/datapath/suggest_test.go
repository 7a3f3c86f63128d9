package datapath

import "testing"

func TestSuggestBroker(t *testing.T) {
	const self = 2
	cases := []struct {
		name string
		in   suggestInput
		want int64
	}{
		{"master without slaveReadEnable, slow read", suggestInput{read: true, slow: true, whenSlow: 1}, 0},
		{"master without slaveReadEnable, in memory", suggestInput{read: true, whenSlow: 1}, 0},
		{"master, slow read", suggestInput{slaveReadEnable: true, read: true, slow: true, whenSlow: 1}, 1},
		{"master, slow read, group names slave 3", suggestInput{slaveReadEnable: true, read: true, slow: true, whenSlow: 3}, 3},
		{"master, in memory", suggestInput{slaveReadEnable: true, read: true, whenSlow: 1}, 0},
		{"master, in memory, group brokerId 1", suggestInput{slaveReadEnable: true, read: true, whenSlow: 1, groupBrokerID: 1}, 1},
		{"master, no read (error answer)", suggestInput{slaveReadEnable: true, slow: true, whenSlow: 1}, 0},
		{"slave, caught up, master up", suggestInput{slave: true, selfID: self, slaveReadEnable: true, masterUp: true, read: true, whenSlow: 1}, 0},
		{"slave, caught up, master down", suggestInput{slave: true, selfID: self, slaveReadEnable: true, read: true, whenSlow: 1}, self},
		{"slave, slow, master up", suggestInput{slave: true, selfID: self, slaveReadEnable: true, masterUp: true, read: true, slow: true, whenSlow: 1}, self},
		{"slave, slow, master down", suggestInput{slave: true, selfID: self, slaveReadEnable: true, read: true, slow: true, whenSlow: 1}, self},
		{"slave, no read, master up", suggestInput{slave: true, selfID: self, slaveReadEnable: true, masterUp: true}, 0},
		{"slave, no read, master down", suggestInput{slave: true, selfID: self, slaveReadEnable: true}, self},
		{"slave refusing pulls", suggestInput{slave: true, selfID: self, read: true, slow: true}, 0},
	}
	for _, c := range cases {
		if got := suggestBroker(c.in); got != c.want {
			t.Errorf("%s: suggestBroker(%+v) = %d, want %d", c.name, c.in, got, c.want)
		}
	}
}

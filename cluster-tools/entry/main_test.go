package main

import (
	"reflect"
	"testing"
	"time"
)

func envOf(values map[string]string) func(string) string {
	return func(name string) string { return values[name] }
}

func TestTaskFromEnvReadsWhatTheGeneratorWrites(t *testing.T) {
	env := map[string]string{
		"TF_CONFIG":                      `{"cluster":{"chief":["c:2222"],"ps":["p:2222"],"worker":["w0:2222","w1:2222"]},"task":{"type":"worker","index":1}}`,
		"TFJOBGEN_JOB":                   "team",
		"TFJOBGEN_API":                   "tf2",
		"TFJOBGEN_CONTROL_ADDRESS":       "c:2224",
		"TFJOBGEN_EVALUATOR":             "1",
		"TFJOBGEN_TASK_RETRIES":          "3",
		"TFJOBGEN_TASK_FAILURES":         "3",
		"TFJOBGEN_PERMANENT_EXIT_CODES":  "2,3,4,42",
		"TFJOBGEN_CHIEF_ABSENCE_SECONDS": "30",
	}
	got, err := taskFromEnv(envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	if got.name() != "worker:1" || got.isChief() || got.absence != 30*time.Second {
		t.Fatalf("read %+v", got)
	}
	if !got.forGood(42) || !got.forGood(1) || got.forGood(0) { // 1 on its last attempt is for good
		t.Fatal("forGood")
	}
	want := []string{"chief:0", "ps:0", "worker:0", "evaluator:0"}
	if !reflect.DeepEqual(got.clients(), want) {
		t.Fatalf("clients %v, want %v", got.clients(), want)
	}
}

func TestWorkerZeroIsTheChiefWithoutOne(t *testing.T) {
	env := map[string]string{"TF_CONFIG": `{"cluster":{"ps":["p:1"],"worker":["w:1"]},"task":{"type":"worker","index":0}}`,
		"TFJOBGEN_JOB": "j", "TFJOBGEN_CONTROL_ADDRESS": "w:2224"}
	got, err := taskFromEnv(envOf(env))
	if err != nil || !got.isChief() || got.lastAttempt() || got.forGood(1) || !got.forGood(3) {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestBadEnvironmentIsOneLine(t *testing.T) {
	cases := map[string]map[string]string{
		"TF_CONFIG is not valid JSON":         {"TF_CONFIG": "{", "TFJOBGEN_JOB": "j", "TFJOBGEN_CONTROL_ADDRESS": "c:1"},
		"TFJOBGEN_CONTROL_ADDRESS is not set": {"TF_CONFIG": `{"cluster":{"ps":["p:1"]},"task":{"type":"ps","index":0}}`, "TFJOBGEN_JOB": "j"},
		"is not in the cluster":               {"TF_CONFIG": `{"cluster":{"ps":["p:1"]},"task":{"type":"ps","index":3}}`, "TFJOBGEN_JOB": "j", "TFJOBGEN_CONTROL_ADDRESS": "c:1"},
		"is not an exit code":                 {"TF_CONFIG": `{"cluster":{"ps":["p:1"]},"task":{"type":"ps","index":0}}`, "TFJOBGEN_JOB": "j", "TFJOBGEN_CONTROL_ADDRESS": "c:1", "TFJOBGEN_PERMANENT_EXIT_CODES": "x"},
	}
	for said, env := range cases {
		_, err := taskFromEnv(envOf(env))
		if err == nil || !contains(err.Error(), said) {
			t.Errorf("%v: got %v", said, err)
		}
	}
}

func contains(text, part string) bool {
	for i := 0; i+len(part) <= len(text); i++ {
		if text[i:i+len(part)] == part {
			return true
		}
	}
	return false
}

func TestOneLineKeepsAReasonWithinALine(t *testing.T) {
	long := make([]byte, 2000)
	for i := range long {
		long[i] = 'a'
	}
	if got := oneLine("a\n b\t c"); got != "a b c" {
		t.Fatal(got)
	}
	if got := oneLine(string(long)); len(got) != maxLine/2 {
		t.Fatal(len(got))
	}
}

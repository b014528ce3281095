for r in $(seq 1 9); do if [ $((r%2)) = 1 ]; then echo "old $(./lm_old)"; echo "new $(./lm_new)"; else echo "new $(./lm_new)"; echo "old $(./lm_old)"; fi; done

// One AdamW step (kernels.Backend.AdamW's contract, torch.optim.AdamW:
// decoupled weight decay, bias correction), elementwise over n parameters:
//
//	param *= decay                                   decay = 1 − lr·wd
//	m = β1·m + (1−β1)·grad;  v = β2·v + (1−β2)·grad²
//	param −= stepSize · m / (sqrt(v)·rbc2 + eps)     stepSize = lr/(1−β1^step)
//	                                                 rbc2 = 1/sqrt(1−β2^step)
//
// The step's constants (decay, 1−β1, 1−β2, stepSize, rbc2) are formed on
// the host in float64 and rounded once, as kernels/ref forms them; the
// rest is f32. Launch: any 1-D geometry (a grid-stride loop, 64-bit
// index). Never run on a GPU: tested on the CPU through
// cpushim/cuda_cpu.h against kernels/ref and PyTorch's values.

extern "C" __global__ void adamw(float *__restrict__ param, const float *__restrict__ grad, float *__restrict__ m,
                                 float *__restrict__ v, int n, float decay, float beta1, float omb1, float beta2,
                                 float omb2, float stepSize, float rbc2, float eps) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		const float g = grad[i];
		const float mi = beta1 * m[i] + omb1 * g;
		const float vi = beta2 * v[i] + omb2 * g * g;
		param[i] = param[i] * decay - stepSize * mi / (sqrtf(vi) * rbc2 + eps);
		m[i] = mi;
		v[i] = vi;
	}
}

#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// A minimal cooperative-matrix kernel, not vk-sgmat's: one subgroup multiplies one 8x8x8 f16
// fragment pair into an f32 accumulator.
layout(local_size_x_id = 0) in;
layout(binding = 0) readonly buffer A { float16_t a[]; };
layout(binding = 1) readonly buffer B { float16_t b[]; };
layout(binding = 2) writeonly buffer C { float c[]; };
void main() {
    coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseA> ma;
    coopmat<float16_t, gl_ScopeSubgroup, 8, 8, gl_MatrixUseB> mb;
    coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> mc =
        coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator>(0.0);
    coopMatLoad(ma, a, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
    coopMatLoad(mb, b, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
    mc = coopMatMulAdd(ma, mb, mc);
    coopMatStore(mc, c, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
